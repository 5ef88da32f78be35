//! The orders example (issue 32) against the real MariaDB, PHP-FPM and nginx, loaded with a
//! flow: each iteration inserts an order (`create`, `POST /orders` with the iteration's
//! `{{seq}}` as the id) and reads it back (`read`, `GET /orders/{{seq}}`), both checked.
//! Three `loadbench run --flow FILE --shard i/3` processes run at once and are merged; the
//! database must then hold one row per `create` answered, each id once, exactly the places
//! the shards' iterations took, with no failed check (no 409, no 404). Then
//! `loadbench bench examples/orders.toml` runs the example whole, warm-up included, without
//! an error. A missing program skips with a message, except under `CI`.
//!
//! With a flow, `-n` counts iterations: a shard's share of `-n 300` is 100 whole iterations,
//! each of its virtual users finishing the iteration it started, so the ids are exactly
//! 1..=300, once each.

use crate::dist::{merge, read};
use crate::support::orders::{http, start_orders};
use crate::support::{bin, loading, tempdir, text};
use loadbench_model::{BenchResult, ErrorKind, RunResult};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;

/// The same two steps as `examples/orders.toml`'s `[load.flow]`.
const FLOW: &str = r#"
name = "order"
[[steps]]
name = "create"
method = "POST"
path = "/orders"
headers = { "Content-Type" = "application/json" }
body = '{"id":{{seq}},"item":"{{pick(book,pen,lamp)}}","qty":{{int(1,5)}},"price_cents":{{int(100,9999)}}}'
check = { status = 201, json = { "/id" = "{{seq}}" } }
[[steps]]
name = "read"
method = "GET"
path = "/orders/{{seq}}"
check = { status = 200, json = { "/id" = "{{seq}}" } }
"#;
const ITEMS: [&str; 3] = ["book", "pen", "lamp"];
const SHARDS: u32 = 3;
/// Connections (virtual users) per shard.
const CONNECTIONS: u64 = 4;
/// Iterations per shard: with a flow `-n` counts iterations, so the run's `-n` is this × 3
/// shards, and each iteration sends its 2 steps.
const ITERATIONS: u64 = 100;
const TOTAL_ITERATIONS: u64 = ITERATIONS * SHARDS as u64;

fn start_shard(url: &str, flow: &Path, i: u32, dir: &Path) -> Child {
    bin()
        .args(["run", url, "--quiet", "-o", "json", "--run-id", "orders"])
        .arg("--flow")
        .arg(flow)
        .args([
            "-n",
            &TOTAL_ITERATIONS.to_string(),
            "-c",
            &CONNECTIONS.to_string(),
        ])
        .args(["-t", "1", "--shard", &format!("{i}/{SHARDS}")])
        .arg("--results-dir")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs")
}

/// A step's requests by name (its place in `stats.endpoints`, named after the step).
fn step(r: &RunResult, name: &str) -> u64 {
    let e = (r.stats.endpoints.iter())
        .find(|e| e.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no step {name} in {:?}", r.stats.endpoints));
    assert_eq!(e.errors.total(), 0, "{name}: {:?}", e.errors);
    e.requests
}

/// One result's flow, step and error figures, for `iterations` iterations: every answer
/// passed its checks and no request failed (no 409, no 404, no `check_failed`), so no
/// iteration broke; each iteration sent both steps and completed; the statuses are exactly
/// one 201 per `create` and one 200 per `read`.
fn assert_shard(r: &RunResult, what: &str, iterations: u64) {
    assert_eq!(r.stats.requests, iterations * 2, "{what}: the exact share");
    assert_eq!(r.stats.errors.total(), 0, "{what}: {:?}", r.stats.errors);
    assert_eq!(r.stats.errors.get(ErrorKind::CheckFailed), 0, "{what}");
    let flow = r.stats.flow.as_ref().expect("the flow's figures");
    assert_eq!((flow.name.as_str(), flow.steps), ("order", 2), "{what}");
    let (create, read) = (step(r, "create"), step(r, "read"));
    assert_eq!((create, read), (iterations, iterations), "{what}");
    assert_eq!(flow.broken, 0, "{what}");
    assert_eq!(flow.completed, iterations, "{what}");
    let status = &r.stats.status;
    assert_eq!(status.non_success(), 0, "{what}: {status:?}");
    assert_eq!(status.0.get(&201).copied().unwrap_or(0), create, "{what}");
    assert_eq!(status.0.get(&200).copied().unwrap_or(0), read, "{what}");
}

/// Every order with an id in `1..=last`, read back one by one: the ids found (each row's
/// values drawn in their ranges).
fn ids_in(addr: SocketAddr, last: u64) -> BTreeSet<u64> {
    let mut found = BTreeSet::new();
    for id in 1..=last {
        let (status, row) = http(addr, "GET", &format!("/orders/{id}"), "");
        if status == 404 {
            continue;
        }
        assert_eq!(status, 200, "{id}: {row}");
        assert_eq!(row["id"], json!(id), "{row}");
        let item = row["item"].as_str().unwrap_or_default();
        assert!(ITEMS.contains(&item), "{row}");
        let qty = row["qty"].as_i64().unwrap_or_default();
        assert!((1..=5).contains(&qty), "{row}");
        let price = row["price_cents"].as_i64().unwrap_or_default();
        assert!((100..=9999).contains(&price), "{row}");
        found.insert(id);
    }
    found
}

#[test]
fn orders_flow_over_three_shards_inserts_and_reads_back_each_iteration_once() {
    let _busy = loading();
    let Some(orders) = start_orders() else {
        return;
    };
    let url = format!("http://{}", orders.addr);
    let dir = tempdir("orders-shards");
    let flow = dir.join("order.toml");
    std::fs::write(&flow, FLOW).unwrap();
    let shards: Vec<Child> = (0..SHARDS)
        .map(|i| start_shard(&url, &flow, i, &dir))
        .collect();
    for (i, shard) in shards.into_iter().enumerate() {
        let out = shard.wait_with_output().unwrap();
        assert!(out.status.success(), "shard {i}: {:?}", text(&out));
    }
    let files: Vec<PathBuf> = (0..SHARDS)
        .map(|i| dir.join(format!("orders-shard-{i}-of-{SHARDS}.json")))
        .collect();
    // Shard i's iterations take the places i, i+3, …: its k-th iteration (k from 0) inserts
    // id 3k+i+1; over the shards, exactly 1..=300.
    for (i, file) in files.iter().enumerate() {
        assert_shard(&read(file), &format!("shard {i}"), ITERATIONS);
    }
    let total = dir.join("total.json");
    let out = merge(&files, &total);
    assert!(out.status.success(), "{:?}", text(&out));
    assert_shard(&read(&total), "merged", TOTAL_ITERATIONS);

    // The table: one row per create, each id once, exactly 1..=300.
    let n = TOTAL_ITERATIONS;
    assert_eq!(
        http(orders.addr, "GET", "/orders/count", ""),
        (200, json!({"rows": n, "min": 1, "max": n, "distinct": n}))
    );
    let found = ids_in(orders.addr, n + u64::from(SHARDS));
    assert_eq!(found, (1..=n).collect::<BTreeSet<u64>>());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn orders_example_runs_its_flow_through_bench_without_a_failed_check() {
    let programs = ["nginx", "php-fpm8.2", "mariadbd", "mariadb-install-db"];
    if !programs.iter().all(|p| crate::support::have(p)) {
        return;
    }
    let _busy = loading();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/orders.toml");
    let dir = tempdir("orders-bench");
    // A warm-up too: its iterations take places of the same sequence, so the measured ones
    // that follow must not repeat an id it inserted (a repeat would answer 409, a failed
    // check).
    let args: Vec<&str> = "--duration 1s --warmup 1s --rounds 2 --cooldown 0s"
        .split(' ')
        .collect();
    let (out, result) = crate::bench::bench(&file, &dir.join("results"), &args);
    assert!(out.status.success(), "{:?}", text(&out));
    let r: BenchResult = result.expect("the bench saved its result");
    assert_eq!(r.steps_done, r.steps_planned);
    let measured: Vec<&RunResult> = r
        .rounds
        .iter()
        .filter(|x| !x.combined)
        .filter_map(|x| x.result.as_ref())
        .collect();
    assert_eq!(measured.len(), 2, "one load, one level, two rounds");
    // The second round goes on with the sequence where the first (its warm-up included)
    // ended: its ids are new to the table, so no 409 and no failed check.
    let places = |r: &RunResult| r.config.values.clone().expect("the run's values");
    let (a, b) = (places(measured[0]), places(measured[1]));
    assert_eq!((a.first, b.first), (0, a.places), "{a:?} {b:?}");
    for run in measured {
        assert_eq!(run.stats.errors.total(), 0, "{:?}", run.stats.errors);
        assert_eq!(run.stats.errors.get(ErrorKind::CheckFailed), 0);
        let flow = run.stats.flow.as_ref().expect("the flow's figures");
        assert_eq!((flow.name.as_str(), flow.steps), ("order", 2));
        assert!(flow.completed > 0, "no iteration completed");
        assert_eq!(flow.broken, 0);
        let (create, read) = (step(run, "create"), step(run, "read"));
        // A measured read that passed its checks completes its iteration (one that began in
        // the warm-up too); one answered after the window is in neither figure.
        assert_eq!(flow.completed, read, "{flow:?}");
        let status = &run.stats.status;
        assert_eq!(status.non_success(), 0, "{status:?}");
        assert_eq!(status.0.get(&201).copied(), Some(create), "{status:?}");
        assert_eq!(status.0.get(&200).copied(), Some(read), "{status:?}");
    }
}
