//! A request mix end to end (docs/request-mix.md): `-u` and `--requests-file` against the
//! reference backend, whose `/stats` counts every route, so each request's count in the result
//! must equal the backend's count for its route; the weights hold within a request or two per
//! worker; status codes and errors land on the request that got them; a requests file's headers
//! and body reach a server that records them; bad input exits 2 naming the fix before any load.

use crate::support::{tempdir, Ran, Run};
use loadbench_model::{EndpointStats, ErrorKind, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

fn backend() -> Server {
    Server::start(ServerConfig::ephemeral()).expect("reference backend starts")
}

fn base(server: &Server) -> String {
    format!("http://{}", server.local_addr())
}

/// Each request's count is within `threads` of its weight's share of all attempts (each worker
/// runs its own round-robin, which holds a few requests' shares within one request).
fn assert_weighted(r: &RunResult, threads: f64) {
    let total_weight: u32 = r.stats.endpoints.iter().map(|e| e.weight).sum();
    let attempts = r.stats.attempts() as f64;
    for e in &r.stats.endpoints {
        let share = attempts * f64::from(e.weight) / f64::from(total_weight);
        let n = e.attempts() as f64;
        assert!(
            (n - share).abs() <= threads,
            "{} {}: {n} vs {share}",
            e.index,
            e.url
        );
    }
}

/// The endpoints add up to the totals: requests, errors, every status code, latency samples.
fn assert_adds_up(r: &RunResult) {
    let e = &r.stats.endpoints;
    fn sum(e: &[EndpointStats], f: impl Fn(&EndpointStats) -> u64) -> u64 {
        e.iter().map(f).sum()
    }
    assert_eq!(sum(e, |e| e.requests), r.stats.requests);
    assert_eq!(sum(e, |e| e.errors.total()), r.stats.errors.total());
    assert_eq!(sum(e, |e| e.latency.hist.len()), r.stats.latency.hist.len());
    for (code, n) in &r.stats.status.0 {
        assert_eq!(
            sum(e, |e| e.status.0.get(code).copied().unwrap_or(0)),
            *n,
            "{code}"
        );
    }
}

#[test]
fn a_weighted_mix_matches_the_backends_per_route_counts() {
    let server = backend();
    let b = base(&server);
    let r = Run::without_url()
        .args(["-u", &format!("{b}/ weight=3"), "-u", &format!("{b}/json")])
        .args(["-n", "400", "-c", "4", "-t", "2"])
        .ok();
    let e = &r.stats.endpoints;
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[0].url.as_str(), e[0].weight),
        (format!("{b}/").as_str(), 3)
    );
    assert_eq!((e[1].method.as_str(), e[1].weight), ("GET", 1));
    let stats = server.stats();
    assert_eq!(e[0].requests, stats.route("/"));
    assert_eq!(e[1].requests, stats.route("/json"));
    assert_eq!(r.stats.requests, 400);
    assert_weighted(&r, 2.0);
    assert_adds_up(&r);
    let single = Run::new(&format!("{b}/"))
        .args(["-n", "20", "-c", "2"])
        .ok();
    assert!(single.stats.endpoints.is_empty(), "no mix, no endpoints");
}

#[test]
fn statuses_and_errors_land_on_the_request_that_got_them() {
    let server = backend();
    let b = base(&server);
    // No keep-alive: a reset on a reused connection would be sent again once (a stale retry),
    // and the backend would count both sends.
    let r = Run::new(&format!("{b}/"))
        .args(["-u", &format!("{b}/status/404 weight=4")])
        .args(["-u", &format!("{b}/status/500 weight=2")])
        .args(["-u", &format!("{b}/fault/reset")])
        .args(["-n", "800", "-c", "4", "-t", "2", "--no-keepalive"])
        .ok();
    let e = &r.stats.endpoints;
    let paths: Vec<&str> = e.iter().map(EndpointStats::path).collect();
    assert_eq!(paths, ["/", "/status/404", "/status/500", "/fault/reset"]);
    let only = |e: &EndpointStats, code: u16| {
        assert_eq!(e.status.0.len(), 1, "{:?}", e.status);
        assert_eq!(e.status.0.get(&code), Some(&e.requests), "{code}");
    };
    only(&e[0], 200);
    only(&e[1], 404);
    only(&e[2], 500);
    assert_eq!(
        (e[3].requests, e[3].errors.get(ErrorKind::Reset)),
        (0, e[3].attempts())
    );
    for ok in &e[..3] {
        assert_eq!(ok.errors.total(), 0, "{}", ok.url);
    }
    let stats = server.stats();
    assert_eq!(e[0].requests, stats.route("/"));
    assert_eq!(e[1].requests + e[2].requests, stats.route("/status"));
    assert_eq!(e[3].errors.total(), stats.route("/fault/reset"));
    assert_eq!(r.stats.attempts(), 800);
    assert_weighted(&r, 2.0);
    assert_adds_up(&r);
}

/// What the recording server saw: each request's head and body.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Vec<u8>,
}

/// A keep-alive HTTP/1.1 server that records every request and answers `200 ok`.
fn recording_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || record(conn, &log));
        }
    });
    (url, seen)
}

fn record(conn: TcpStream, log: &Mutex<Vec<Seen>>) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        log.lock().unwrap().push(Seen { head, body });
        if out
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
    }
}

#[test]
fn a_requests_file_sends_its_methods_headers_and_bodies() {
    let (url, seen) = recording_server();
    let dir = tempdir("mix-file");
    let payload = b"{\"order\": 42, \"items\": [1, 2, 3]}";
    std::fs::write(dir.join("payload.json"), payload).unwrap();
    let file = dir.join("requests.txt");
    let lines = format!(
        "# checkout mix\n\nPOST {url}/upload weight=2 header=\"X-Mix: one two\" body=payload.json\n  GET {url}/plain?q=1 header=X-Other:1\n"
    );
    std::fs::write(&file, lines).unwrap();
    let r = Run::without_url()
        .args([
            "--requests-file",
            file.to_str().unwrap(),
            "-H",
            "X-All: yes",
        ])
        .args(["-n", "30", "-c", "1"])
        .ok();
    let e = &r.stats.endpoints;
    let got: Vec<(&str, u64)> = e.iter().map(|e| (e.method.as_str(), e.requests)).collect();
    assert_eq!(got, [("POST", 20), ("GET", 10)]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 30);
    let posts: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.head.starts_with("POST /upload HTTP/1.1\r\n"))
        .collect();
    let gets: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.head.starts_with("GET /plain?q=1 HTTP/1.1\r\n"))
        .collect();
    assert_eq!((posts.len(), gets.len()), (20, 10));
    for p in &posts {
        assert!(p.head.contains("\r\nX-Mix: one two\r\n"), "{}", p.head);
        assert!(p.head.contains("\r\nX-All: yes\r\n"), "{}", p.head);
        assert_eq!(p.body, payload);
    }
    for g in &gets {
        assert!(g.head.contains("\r\nX-Other: 1\r\n") && g.head.contains("\r\nX-All: yes\r\n"));
        assert!(g.body.is_empty() && !g.head.contains("X-Mix"), "{}", g.head);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn refused(ran: &Ran) -> String {
    assert_eq!(ran.code(), Some(2), "{:?}", ran.text());
    assert!(ran.saved.is_none());
    let err = ran.text().1;
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn bad_mixes_exit_2_before_any_load() {
    let server = backend();
    let b = base(&server);
    let dir = tempdir("mix-bad");
    let file = dir.join("requests.txt");
    std::fs::write(
        &file,
        format!("{b}/\n# fine so far\nGET {b}/json weight=zero\n"),
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let err = refused(
        &Run::without_url()
            .args(["--requests-file", f, "-n", "10", "-c", "1"])
            .json(),
    );
    assert!(err.contains("requests.txt:3: weight 'zero'"), "{err}");
    let other = format!("http://127.0.0.1:{}/", crate::support::free_port());
    let ran = Run::new(&format!("{b}/"))
        .args(["-u", &other, "-n", "10", "-c", "1"])
        .json();
    let err = refused(&ran);
    assert!(
        err.contains(&other) && err.contains("separate loads"),
        "{err}"
    );
    let err = refused(
        &Run::new(&format!("{b}/"))
            .args(["-u", &format!("{b}/ colour=red")])
            .json(),
    );
    assert!(
        err.contains("-u") && err.contains("unknown field 'colour'"),
        "{err}"
    );
    let missing = dir.join("nope.txt");
    let err = refused(
        &Run::without_url()
            .args(["--requests-file", missing.to_str().unwrap()])
            .json(),
    );
    assert!(err.contains("nope.txt"), "{err}");
    let err = refused(&Run::without_url().args(["-n", "10"]).json());
    assert!(err.contains("no URL to load"), "{err}");
    assert_eq!(server.stats().total, 0, "nothing was sent");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario's load lists weighted requests: every round's result breaks down per request,
/// each request's status is the one its path answers, and the counts follow the weights.
#[test]
fn a_scenario_load_sends_its_weighted_requests() {
    let _machine = crate::support::loading();
    let dir = tempdir("mix-bench");
    let file = dir.join("mix.toml");
    let text = "name = \"mix\"\nrounds = 1\ncooldown = \"0s\"\n\
        [[target]]\nname = \"backend\"\nkind = \"upstream\"\n[target.upstream]\nthreads = 1\n\
        [[load]]\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [2]\n\
        duration = \"1s\"\nwarmup = \"0s\"\n\
        [[load.requests]]\npath = \"/json\"\nweight = 3\n\
        [[load.requests]]\npath = \"/status/404\"\n";
    std::fs::write(&file, text).unwrap();
    let results = dir.join("results");
    let out = crate::support::bin()
        .arg("bench")
        .arg(&file)
        .arg("--results")
        .arg(&results)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", crate::support::text(&out));
    let folder = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let saved = std::fs::read_to_string(folder.join("result.json")).unwrap();
    let bench = loadbench_model::BenchResult::from_json(&saved).unwrap();
    let r = bench.rounds[0].result.as_ref().expect("the round ran");
    let e = &r.stats.endpoints;
    let paths: Vec<(&str, u32)> = e.iter().map(|e| (e.path(), e.weight)).collect();
    assert_eq!(paths, [("/json", 3), ("/status/404", 1)]);
    assert_eq!(e[0].status.0.keys().collect::<Vec<_>>(), [&200]);
    assert_eq!(e[1].status.0.keys().collect::<Vec<_>>(), [&404]);
    assert!(r.stats.requests > 40, "{}", r.stats.requests);
    // Requests in flight at the end were picked but have no outcome: two connections' worth
    // beside the round-robin's own spread of one per worker at each end of the window.
    assert_weighted(r, 6.0);
    assert_adds_up(r);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts shard `i` of 2 of a 3:1 mix of `/` and `/json` on `b`, at `at`, saving into `dir`.
fn start_mix_shard(b: &str, i: u32, at: &str, dir: &std::path::Path) -> std::process::Child {
    let mix = [format!("{b}/ weight=3"), format!("{b}/json")];
    crate::support::bin()
        .args(["run", "-u", &mix[0], "-u", &mix[1]])
        .args(["-n", "400", "-c", "4", "-t", "1", "--quiet", "-o", "json"])
        .args([
            "--run-id",
            "mix",
            "--shard",
            &format!("{i}/2"),
            "--start-at",
            at,
        ])
        .arg("--results-dir")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn read_run(p: &std::path::Path) -> RunResult {
    RunResult::from_json(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// `loadbench report FILE`'s row of each request shows its merged count.
fn assert_report_rows(file: &std::path::Path, merged: &RunResult) {
    let report = crate::support::bin()
        .arg("report")
        .arg(file)
        .output()
        .unwrap();
    let text = crate::support::text(&report).0;
    for e in &merged.stats.endpoints {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("{} {} ", e.method, e.path())))
            .unwrap_or_else(|| panic!("no row for {} in {text}", e.url));
        assert!(line.contains(&format!("200: {}", e.requests)), "{line}");
    }
}

/// Two shards of one mix, started together and `merge`d: each request's merged count and
/// histogram is the sum of the shards', and equals what the backend counted for its route; the
/// report of the merge shows the per-request table with those counts.
#[test]
fn shards_of_a_mix_merge_per_request_exactly() {
    let _machine = crate::support::loading();
    let server = backend();
    let b = base(&server);
    let dir = tempdir("mix-shards");
    let at = std::time::SystemTime::now() + std::time::Duration::from_millis(2000);
    let at = humantime::format_rfc3339_millis(at).to_string();
    let children: Vec<_> = (0..2).map(|i| start_mix_shard(&b, i, &at, &dir)).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a shard failed");
    }
    let files: Vec<_> = (0..2)
        .map(|i| dir.join(format!("mix-shard-{i}-of-2.json")))
        .collect();
    let shards: Vec<RunResult> = files.iter().map(|f| read_run(f)).collect();
    let total = dir.join("total.json");
    let out = crate::support::bin()
        .arg("merge")
        .args(&files)
        .arg("-o")
        .arg(&total)
        .output();
    let out = out.unwrap();
    assert!(out.status.success(), "{:?}", crate::support::text(&out));
    let merged = read_run(&total);
    let stats = server.stats();
    for (i, route) in ["/", "/json"].iter().enumerate() {
        let e = &merged.stats.endpoints[i];
        let parts: Vec<&EndpointStats> = shards.iter().map(|s| &s.stats.endpoints[i]).collect();
        let requests: u64 = parts.iter().map(|p| p.requests).sum();
        let samples: u64 = parts.iter().map(|p| p.latency.hist.len()).sum();
        assert_eq!(
            (e.requests, e.latency.hist.len()),
            (requests, samples),
            "{route}"
        );
        assert_eq!(e.requests, stats.route(route), "{route}");
    }
    assert_eq!(merged.stats.requests, 400);
    assert_weighted(&merged, 2.0);
    assert_adds_up(&merged);
    assert_report_rows(&total, &merged);
    let _ = std::fs::remove_dir_all(&dir);
}

/// find-max takes the same mix flags: every step's run breaks down per request, and the report
/// shows the per-request table of the highest passing step.
#[test]
fn find_max_searches_with_a_mix() {
    let _machine = crate::support::loading();
    let server = backend();
    let b = base(&server);
    let dir = tempdir("mix-find-max");
    let save = dir.join("fm.json");
    let out = crate::support::bin()
        .args([
            "find-max",
            "-u",
            &format!("{b}/ weight=3"),
            "-u",
            &format!("{b}/json"),
        ])
        .args([
            "--slo",
            "p99<2s",
            "--step-duration",
            "500ms",
            "--warmup",
            "0s",
        ])
        .args([
            "--start-rate",
            "40",
            "--max-rate",
            "80",
            "--max-steps",
            "2",
            "--quiet",
        ])
        .arg("--save")
        .arg(&save)
        .output()
        .unwrap();
    let (stdout, stderr) = crate::support::text(&out);
    assert!(out.status.success(), "{stderr}");
    let saved = std::fs::read_to_string(&save).unwrap();
    let r = loadbench_model::FindMaxResult::from_json(&saved).unwrap();
    for step in &r.steps {
        let e = &step.run.stats.endpoints;
        let paths: Vec<&str> = e.iter().map(EndpointStats::path).collect();
        assert_eq!(paths, ["/", "/json"], "step {}", step.step);
        assert_adds_up(&step.run);
    }
    let last = r.steps.last().unwrap();
    assert!(
        stdout.contains(&format!("Per request (mix) at step {}", last.step)),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
