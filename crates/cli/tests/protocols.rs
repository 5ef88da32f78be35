//! HTTP/3, gRPC and WebSocket beyond a single `run` (issue 41): three `run --shard I/3`
//! processes merge into exactly the whole load, counted as the server counted it (the
//! reference backend's HTTP/3 and WebSocket echo, grpc-go's calls by status), and `find-max`
//! searches with each protocol, every step speaking it.

use crate::dist::{merge, read};
use crate::find_max::find_max;
use crate::grpc::{proto, GrpcGo};
use crate::support::{bin, loading, tempdir};
use loadbench_model::{FindMaxResult, RunResult};
use loadbench_upstream::{Server, ServerConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Runs shards 0 to 2 of `-n total -c 3` of `url` with `args` at one start instant and merges
/// them; the merged result.
fn three_shards(url: &str, args: &[&str], total: u64, dir: &Path) -> RunResult {
    let at = SystemTime::now() + Duration::from_millis(2500);
    let at = humantime::format_rfc3339_millis(at).to_string();
    let n = total.to_string();
    let children: Vec<_> = (0..3)
        .map(|i| {
            bin()
                .args(["run", url, "--quiet", "--run-id", "p41"])
                .args(["-n", &n, "-c", "3", "-t", "1"])
                .args(args)
                .args(["--shard", &format!("{i}/3"), "--start-at", &at])
                .arg("--results-dir")
                .arg(dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the loadbench binary runs")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "a shard failed: {err}");
    }
    let files: Vec<PathBuf> = (0..3)
        .map(|i| dir.join(format!("p41-shard-{i}-of-3.json")))
        .collect();
    let merged = dir.join("merged.json");
    let out = merge(&files, &merged);
    assert!(out.status.success(), "{:?}", out);
    read(&merged)
}

#[test]
fn http3_shards_merge_into_the_backends_count() {
    let _busy = loading();
    let dir = tempdir("shards-h3");
    let (server, ca) = crate::tls::tls_backend(&dir);
    let url = format!("https://localhost:{}/", server.local_addr().port());
    let args = [
        "--http3",
        "--cacert",
        ca.to_str().unwrap(),
        "--streams",
        "2",
    ];
    let m = three_shards(&url, &args, 300, &dir);
    assert_eq!(m.stats.requests, 300, "{:?}", m.stats.errors);
    assert_eq!(m.stats.protocols.h3, 3, "one connection a shard");
    let stats = server.stats();
    assert_eq!((stats.h3, stats.route("/")), (300, 300), "{stats:?}");
}

#[test]
fn grpc_shards_merge_into_grpc_gos_counts_by_status() {
    let Some(server) = GrpcGo::start() else {
        return;
    };
    let _busy = loading();
    let dir = tempdir("shards-grpc");
    let proto = proto();
    let args = [
        "--proto",
        proto.to_str().unwrap(),
        "--grpc-method",
        "grpc.health.v1.Health/Check",
        "--body",
        r#"{"service": "no.such.Service"}"#,
    ];
    let m = three_shards(&server.url(), &args, 240, &dir);
    assert_eq!(m.stats.grpc.count("NOT_FOUND"), 240, "{:?}", m.stats.grpc);
    assert_eq!(m.stats.grpc.failed_http_ok, Some(240));
    let failed: u64 = m.stats.series.0.iter().map(|p| p.failed).sum();
    assert_eq!(
        failed, 240,
        "every shard's failed answers in the merged series"
    );
    let want: BTreeMap<String, u64> = [("NOT_FOUND".to_string(), 240)].into();
    assert_eq!(server.stop(), want);
}

#[test]
fn websocket_shards_merge_into_the_echos_count() {
    let _busy = loading();
    let dir = tempdir("shards-ws");
    let server = Server::start(ServerConfig::ephemeral()).unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    let m = three_shards(&url, &["--body", "hello"], 300, &dir);
    assert_eq!(m.stats.requests, 300, "{:?}", m.stats.errors);
    assert_eq!(m.stats.ws.upgrades, 3, "{:?}", m.stats.ws);
    assert_eq!(m.stats.body.total, 300 * 5);
    assert_eq!(server.stats().route("/ws"), 300);
}

/// Two short steps (50 and 100 per second, the highest rate tried), every one measured over
/// the protocol asked for; the searched rate is the second's.
fn search(url: &str, args: &[&str], dir: &Path) -> FindMaxResult {
    let mut all = vec![
        "--slo",
        "p99<5s",
        "--start-rate",
        "50",
        "--max-rate",
        "100",
        "--step-duration",
        "1s",
        "--warmup",
        "200ms",
        "-t",
        "1",
    ];
    all.extend_from_slice(args);
    let (out, saved) = find_max(url, &all, &dir.join("find-max.json"));
    assert!(out.status.success(), "{out:?}");
    let r = saved.expect("a saved search");
    assert_eq!(r.steps.len(), 2, "{:?}", r.steps);
    assert_eq!(r.max_rate, Some(100.0));
    r
}

#[test]
fn find_max_searches_over_http3_grpc_and_websocket() {
    let _busy = loading();
    let dir = tempdir("find-max-protocols");
    let (server, ca) = crate::tls::tls_backend(&dir);
    let port = server.local_addr().port();
    let h3 = search(
        &format!("https://localhost:{port}/"),
        &["--http3", "--cacert", ca.to_str().unwrap()],
        &dir,
    );
    for step in &h3.steps {
        let s = &step.run.stats;
        assert!(s.requests > 0 && s.protocols.h3 > 0, "{:?}", s.protocols);
        assert_eq!((s.protocols.h1, s.protocols.h2), (0, 0));
    }
    let measured: u64 = h3.steps.iter().map(|s| s.run.stats.requests).sum();
    assert!(server.stats().h3 >= measured, "{:?}", server.stats());
    let plain = Server::start(ServerConfig::ephemeral()).unwrap();
    let proto = proto();
    let grpc = search(
        &format!("grpc://{}", plain.local_addr()),
        &[
            "--proto",
            proto.to_str().unwrap(),
            "--grpc-method",
            "grpc.health.v1.Health/Check",
            "--body",
            r#"{"service": "x"}"#,
        ],
        &dir,
    );
    for step in &grpc.steps {
        let s = &step.run.stats;
        assert_eq!(s.grpc.count("OK"), s.requests, "{:?}", s.grpc);
        assert!(s.requests > 0);
    }
    let ws = search(
        &format!("ws://{}/ws", plain.local_addr()),
        &["--body", "hi"],
        &dir,
    );
    for step in &ws.steps {
        let s = &step.run.stats;
        assert!(s.requests > 0 && s.ws.upgrades > 0, "{:?}", s.ws);
        assert_eq!(s.body.total, s.requests * 2);
    }
}
