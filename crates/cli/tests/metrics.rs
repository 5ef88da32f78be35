//! Live metrics for Prometheus (issue 39, docs/metrics.md) with the real binary: a real
//! Prometheus (Debian's `prometheus`; skipped without it unless CI is set) scrapes
//! `--metrics-listen` while `loadbench run` loads the reference backend, and its query API then
//! gives the saved result's totals (responses by status, errors by class) and a p99 within the
//! histogram's bucket of the result's. Three shards pushing with `--prometheus-remote-write` and
//! one run id add up to `loadbench merge`'s total; a Prometheus killed mid-run costs pushes (one
//! line says how many), never the result. Bad input (an address that is not loopback without
//! `--metrics-public`, a port in use, not an address; a push URL with nothing listening or no
//! receiver) is one line, exit 2, before any load.

use crate::support::prometheus::Prometheus;
use crate::support::{bin, free_port, have, loading, tempdir, text, Run};
use loadbench_model::{ErrorKind, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Stdio};

fn backend(fail_rate: f64) -> Server {
    Server::start(ServerConfig {
        fail_rate,
        ..ServerConfig::ephemeral()
    })
    .expect("reference backend starts")
}

/// `sum by (label)` of the last value of `series` over the last 10 minutes (the run's series go
/// stale once it has exited), as label value -> count.
pub(crate) fn by(prom: &Prometheus, series: &str, label: &str) -> BTreeMap<String, u64> {
    let q = format!("sum by ({label}) (last_over_time({series}[10m]))");
    prom.query(&q)
        .unwrap_or_else(|| panic!("query {q} failed"))
        .into_iter()
        .map(|(m, v)| (m[label].as_str().unwrap_or("").to_string(), v as u64))
        .collect()
}

fn error_name(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// The p99 Prometheus computes from the scraped buckets lies in the bucket of the result's p99
/// (its bounds, give or take the per-second histograms' 1%).
fn assert_p99_within_resolution(prom: &Prometheus, r: &RunResult) {
    let q = "histogram_quantile(0.99, sum by (le) \
             (last_over_time(loadbench_latency_seconds_bucket[10m])))";
    let p99 = prom.value(q).expect("a p99 from the histogram");
    let want = r.stats.latency.hist.percentile_ns(99.0) as f64 / 1e9;
    let bounds = loadbench_live::metrics::bucket_bounds();
    let i = bounds.partition_point(|&b| b < want);
    let lo = if i == 0 { 0.0 } else { bounds[i - 1] };
    let hi = bounds[i];
    assert!(
        p99 >= lo * 0.99 && p99 <= hi * 1.01,
        "Prometheus's p99 {p99} s is outside the bucket {lo}..{hi} s of the result's p99 {want} s"
    );
}

#[test]
fn prometheus_scrapes_the_totals_and_the_p99_of_the_saved_result() {
    if !have("prometheus") {
        return;
    }
    let _machine = loading();
    let server = backend(0.05);
    let base = format!("http://{}", server.local_addr());
    let port = free_port();
    let prom = Prometheus::start(&[format!("127.0.0.1:{port}")]);
    // Half the requests to a route that resets the connection: errors of a class beside the
    // 200s and the 500s of --fail-rate.
    let r = Run::new(&format!("{base}/"))
        .args(["-u", &format!("{base}/fault/reset")])
        .args(["-c", "4", "-t", "1", "-d", "4s"])
        .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
        .ok();
    assert!(r.stats.requests > 0 && r.stats.errors.total() > 0, "{r:?}");
    let total = "sum(last_over_time(loadbench_responses_total[10m]))";
    let got = prom.settle(total, r.stats.requests as f64, 20);
    assert_eq!(
        got,
        Some(r.stats.requests as f64),
        "responses: {}",
        prom.log()
    );
    let status: BTreeMap<String, u64> = r
        .stats
        .status
        .0
        .iter()
        .map(|(code, n)| (code.to_string(), *n))
        .collect();
    assert!(status.contains_key("500"), "{status:?}");
    assert_eq!(by(&prom, "loadbench_responses_total", "code"), status);
    let errors: BTreeMap<String, u64> = r
        .stats
        .errors
        .0
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (error_name(*k), *n))
        .collect();
    assert_eq!(by(&prom, "loadbench_errors_total", "class"), errors);
    let sent = prom.value("sum(last_over_time(loadbench_sent_requests_total[10m]))");
    assert_eq!(sent, Some(r.stats.sent as f64));
    let count = prom.value("sum(last_over_time(loadbench_latency_seconds_count[10m]))");
    assert_eq!(
        count,
        Some(r.stats.latency.hist.len() as f64),
        "the histogram holds every latency the result does"
    );
    assert_p99_within_resolution(&prom, &r);
    let running = prom.value("last_over_time(loadbench_running[10m])");
    assert_eq!(running, Some(0.0), "the last scrape came after the end");
}

#[test]
fn a_bad_listen_address_is_one_line_and_exit_2_before_any_request() {
    let server = backend(0.0);
    let url = format!("http://{}/", server.local_addr());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let in_use = taken.local_addr().unwrap().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--metrics-listen", "0.0.0.0:0"], "--metrics-public"),
        (&["--metrics-listen", "nowhere"], "is not an address"),
        (&["--metrics-listen", &in_use], "cannot listen there"),
        (&["--metrics-public"], "--metrics-listen"),
    ];
    for (args, says) in cases {
        for command in [
            &["run", &url, "-d", "1s"][..],
            &["find-max", &url, "--slo", "p99<1s"][..],
        ] {
            let out = bin().args(command).args(args).output().unwrap();
            let (_, err) = text(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            if !says.starts_with("--metrics-listen") {
                assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
            }
        }
    }
    assert_eq!(server.stats().total, 0, "no request reached the backend");
}

/// Runs shards 0, 1 and 2 of 3 of 900 requests under `run_id`, each pushing to `write_url`
/// and saving its result into `dir`; asserts each succeeded without a lost push; returns their
/// result files.
fn push_shards(url: &str, run_id: &str, write_url: &str, dir: &std::path::Path) -> Vec<PathBuf> {
    let children: Vec<Child> = (0..3)
        .map(|i| {
            bin()
                .args(["run", url, "--quiet", "-n", "900", "-c", "6", "-t", "1"])
                .args(["--shard", &format!("{i}/3"), "--run-id", run_id])
                .arg("--results-dir")
                .arg(dir)
                .args(["--prometheus-remote-write", write_url])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the loadbench binary runs")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let (_, err) = text(&out);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("lost"), "no push lost: {err}");
    }
    (0..3)
        .map(|i| dir.join(format!("{run_id}-shard-{i}-of-3.json")))
        .collect()
}

#[test]
fn three_shards_pushing_with_one_run_id_add_up_to_the_merge() {
    if !have("prometheus") {
        return;
    }
    let _machine = loading();
    let server = backend(0.0);
    let url = format!("http://{}/", server.local_addr());
    let prom = Prometheus::start(&[]);
    let dir = tempdir("push-shards");
    let run_id = format!("t39-{}", crate::support::unique());
    let shards = push_shards(&url, &run_id, &prom.write_url(), &dir);
    let merged = dir.join("merged.json");
    let out = crate::dist::merge(&shards, &merged);
    assert!(out.status.success(), "{:?}", text(&out));
    let merged = crate::dist::read(&merged);
    assert_eq!(merged.stats.requests, 900);
    let pushed = merged
        .remote_write
        .clone()
        .expect("the shards' pushes in the merge");
    assert_eq!((pushed.lost, pushed.sent), (0, pushed.pushes), "{pushed:?}");
    assert!(
        pushed.pushes >= 3,
        "a final push per shard at least: {pushed:?}"
    );
    let q = format!(
        "sum by (run_id) (last_over_time(loadbench_responses_total{{run_id=\"{run_id}\"}}[10m]))"
    );
    let got = prom.settle(&q, merged.stats.requests as f64, 20);
    assert_eq!(got, Some(merged.stats.requests as f64), "{}", prom.log());
    let per_shard = by(
        &prom,
        &format!("loadbench_responses_total{{run_id=\"{run_id}\"}}"),
        "shard",
    );
    assert_eq!(
        per_shard.keys().cloned().collect::<Vec<_>>(),
        ["0/3", "1/3", "2/3"],
        "each shard pushed under its own label"
    );
}

#[test]
fn killing_prometheus_mid_run_loses_pushes_not_the_result() {
    if !have("prometheus") {
        return;
    }
    let _machine = loading();
    let server = backend(0.0);
    let url = format!("http://{}/", server.local_addr());
    let mut prom = Prometheus::start(&[]);
    let dir = tempdir("push-kill");
    let save = dir.join("result.json");
    // The open model with -n: exactly 1600 requests, about 8 s at 200/s, so the server is
    // gone for the 5 s push and the final one.
    let child = bin()
        .args([
            "run", &url, "--quiet", "--rate", "200", "-n", "1600", "-c", "4", "-t", "1",
        ])
        .args(["--prometheus-remote-write", &prom.write_url()])
        .arg("--save")
        .arg(&save)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs");
    // The start probe has passed once the load reaches the backend.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.stats().total == 0 {
        assert!(std::time::Instant::now() < until, "the load never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    prom.kill();
    let out = child.wait_with_output().unwrap();
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let r = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(r.stats.requests, 1600, "{err}");
    assert_eq!(
        server.stats().total,
        1600,
        "the backend saw every request once"
    );
    let lost: Vec<&str> = err.lines().filter(|l| l.contains("pushes to")).collect();
    assert_eq!(lost.len(), 1, "one line about the lost pushes: {err}");
    assert!(
        lost[0].contains("were lost") && lost[0].contains(&prom.write_url()),
        "{err}"
    );
    let pushed = r.remote_write.expect("the pushes in the result");
    assert!(pushed.lost >= 1, "{pushed:?}");
    assert!(
        lost[0].contains(&format!("{} of {} pushes", pushed.lost, pushed.pushes)),
        "the line and the result agree: {pushed:?} {err}"
    );
}

#[test]
fn an_unreachable_or_foreign_push_url_is_one_line_and_exit_2_before_any_request() {
    let server = backend(0.0);
    let url = format!("http://{}/", server.local_addr());
    let closed = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    // The reference backend answers a POST to /api/v1/write with a 404: not a receiver.
    let foreign = format!("http://{}/api/v1/write", server.local_addr());
    for (push, says) in [
        (closed.as_str(), "cannot connect"),
        (foreign.as_str(), "404"),
        ("https://127.0.0.1:1/api/v1/write", "only http://"),
        ("nowhere", "not a URL"),
    ] {
        let out = bin()
            .args(["run", &url, "-d", "1s", "--prometheus-remote-write", push])
            .output()
            .unwrap();
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{push}: {err}");
        assert!(err.contains(says), "{push}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let routes = server.stats().routes;
    assert_eq!(
        routes["/"], 0,
        "only the probes reached the backend, no load: {routes:?}"
    );
}

/// What [`scrape`] saw.
struct Scraped {
    /// Every sample name (`loadbench_latency_seconds_bucket`, ...).
    names: BTreeSet<String>,
    /// The last exposition with responses in it.
    last: String,
    /// The sum of `loadbench_responses_total` at each scrape that had it, in order.
    totals: Vec<f64>,
}

/// Scrapes the endpoint at `port` of `command` every 200 ms from its start to its exit.
fn scrape(command: &mut std::process::Command, port: u16) -> Scraped {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs");
    let mut names = BTreeSet::new();
    let mut last = String::new();
    let mut totals = Vec::new();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < until,
            "still running after 120 s"
        );
        if let Some((200, body)) = crate::support::prometheus::get(port, "/metrics") {
            for line in body.lines().filter(|l| !l.starts_with('#')) {
                let name = line.split(['{', ' ']).next().unwrap_or_default();
                names.insert(name.to_string());
            }
            let responses: Vec<f64> = body
                .lines()
                .filter(|l| l.starts_with("loadbench_responses_total{"))
                .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
                .collect();
            if !responses.is_empty() {
                totals.push(responses.iter().sum());
                last = body;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    Scraped {
        names,
        last,
        totals,
    }
}

/// Every `loadbench_…` name in an `expr` or `query` of the dashboard.
fn dashboard_names(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                if let (true, Some(text)) = (k == "expr" || k == "query", v.as_str()) {
                    let mut rest = text;
                    while let Some(i) = rest.find("loadbench_") {
                        let name: String = rest[i..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        rest = &rest[i + name.len()..];
                        out.insert(name);
                    }
                }
                dashboard_names(v, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| dashboard_names(v, out)),
        _ => {}
    }
}

const METRICS_BENCH: &str = "name = \"m\"\nrounds = 1\ncooldown = \"1s\"\n\
    [[target]]\nname = \"up\"\nkind = \"upstream\"\n\
    limits = { cpus = 1.5, memory = \"256MiB\" }\n\
    [[load]]\nname = \"paced\"\nmodel = \"open\"\ntargets = [\"up\"]\n\
    rate = [200]\nduration = \"4s\"\n";

/// Every series deploy/grafana/loadbench.json's queries name (it must parse).
fn dashboard_series() -> BTreeSet<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text_of = std::fs::read_to_string(root.join("deploy/grafana/loadbench.json")).unwrap();
    let dashboard: serde_json::Value =
        serde_json::from_str(&text_of).expect("the dashboard parses");
    let mut wanted = BTreeSet::new();
    dashboard_names(&dashboard, &mut wanted);
    wanted
}

/// The scrapes of [`METRICS_BENCH`] run in `dir`.
fn scrape_bench(dir: &std::path::Path) -> Scraped {
    let file = dir.join("m.toml");
    std::fs::write(&file, METRICS_BENCH).unwrap();
    let port = free_port();
    scrape(
        bin()
            .args(["bench", "--quiet"])
            .arg(&file)
            .arg("--results")
            .arg(dir.join("results"))
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")]),
        port,
    )
}

/// The Grafana dashboard parses, and every series its queries name is in a real scrape: of an
/// open-model run with errors (the load's series), and of a bench (the target's series, the
/// step as labels).
#[test]
fn every_series_of_the_grafana_dashboard_is_in_a_real_scrape() {
    let _machine = loading();
    let wanted = dashboard_series();
    assert!(wanted.len() >= 15, "{wanted:?}");

    let server = backend(0.0);
    let base = format!("http://{}", server.local_addr());
    let port = free_port();
    let dir = tempdir("metrics-bench");
    let save = dir.join("run.json");
    let Scraped {
        mut names, last, ..
    } = scrape(
        bin()
            .args([
                "run",
                &format!("{base}/"),
                "-u",
                &format!("{base}/fault/reset"),
            ])
            .args(["--rate", "200", "-d", "4s", "-t", "1", "--quiet"])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .arg("--save")
            .arg(&save),
        port,
    );
    let r = RunResult::from_json(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let scheduled = r.stats.scheduled.expect("an open-model run has a schedule");
    assert!(
        last.contains(&format!(
            "loadbench_scheduled_requests_total{{command=\"run\"}} {scheduled}\n"
        )),
        "the last scrape's schedule is the result's ({scheduled}): {last}"
    );
    let Scraped {
        names: bench_names,
        last,
        ..
    } = scrape_bench(&dir);
    names.extend(bench_names);
    let missing: Vec<&String> = wanted.iter().filter(|n| !names.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "in the dashboard, never scraped: {missing:?}; scraped: {names:?}"
    );
    assert!(
        last.contains(
            "loadbench_sent_requests_total{command=\"bench\",target=\"up\",load=\"paced\",level=\"200/s\",round=\"1\"}"
        ),
        "the bench step as labels: {last}"
    );
}

/// A find-max's steps are loads one after another: its counters add them up, so they never go
/// back between steps, and the last scrape comes after the end.
#[test]
fn find_max_counters_only_grow_across_its_steps() {
    let _machine = loading();
    let server = backend(0.0);
    let url = format!("http://{}/", server.local_addr());
    let port = free_port();
    let seen = scrape(
        bin()
            .args(["find-max", &url, "--slo", "p99<1s", "--quiet", "-t", "1"])
            .args([
                "--start-rate",
                "100",
                "--max-rate",
                "400",
                "--step-duration",
                "1s",
            ])
            .args(["--max-steps", "3"])
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")]),
        port,
    );
    assert!(
        seen.totals.len() >= 3,
        "scraped too rarely: {:?}",
        seen.totals
    );
    assert!(
        seen.totals.windows(2).all(|w| w[1] >= w[0]),
        "a counter went back: {:?}",
        seen.totals
    );
    let first = seen.totals[0];
    let last = *seen.totals.last().unwrap();
    assert!(last > first && last >= 150.0, "{:?}", seen.totals);
    assert!(
        seen.last
            .contains("loadbench_running{command=\"find-max\"} 0\n"),
        "{}",
        seen.last
    );
}
