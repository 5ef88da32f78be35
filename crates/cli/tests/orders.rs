//! The orders example (issue 32) against the real MariaDB, PHP-FPM and nginx: three
//! `loadbench run --shard i/3` processes insert `-n 300` orders with per-request values
//! (`{{seq}}` ids striped over the shards), their results are merged, and the database must
//! hold exactly the merged count of rows, ids 1..=300 once each, with no 409; then
//! `loadbench bench examples/orders.toml` runs the example whole, warm-up included, without an
//! error answer. A missing program skips with a message, except under `CI`.

use crate::dist::{merge, read};
use crate::support::orders::{http, start_orders};
use crate::support::{bin, loading, tempdir, text};
use loadbench_model::{BenchResult, RunResult};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Child;

/// One order per request: the id is the request's place in the whole run.
const BODY: &str = r#"{"id":{{seq}},"item":"{{pick(book,pen,lamp)}}","qty":{{int(1,5)}},"price_cents":{{int(100,9999)}}}"#;
const ITEMS: [&str; 3] = ["book", "pen", "lamp"];
const TOTAL: u64 = 300;

fn start_shard(url: &str, i: u32, dir: &Path) -> Child {
    let total = TOTAL.to_string();
    bin()
        .args(["run", url, "--quiet", "-o", "json", "--run-id", "orders"])
        .args(["-m", "POST", "-H", "Content-Type: application/json"])
        .args(["--body", BODY, "-n", &total, "-c", "4", "-t", "1"])
        .args(["--shard", &format!("{i}/3")])
        .arg("--results-dir")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the loadbench binary runs")
}

#[test]
fn orders_three_shards_insert_every_id_once_and_the_table_matches_the_merge() {
    let _busy = loading();
    let Some(orders) = start_orders() else {
        return;
    };
    let url = format!("http://{}/orders", orders.addr);
    let dir = tempdir("orders-shards");
    let shards: Vec<Child> = (0..3).map(|i| start_shard(&url, i, &dir)).collect();
    for (i, shard) in shards.into_iter().enumerate() {
        let out = shard.wait_with_output().unwrap();
        assert!(out.status.success(), "shard {i}: {:?}", text(&out));
    }
    let files: Vec<PathBuf> = (0..3)
        .map(|i| dir.join(format!("orders-shard-{i}-of-3.json")))
        .collect();
    for (i, file) in files.iter().enumerate() {
        let shard = read(file);
        assert_eq!(shard.stats.requests, TOTAL / 3, "shard {i}'s exact share");
    }
    let total = dir.join("total.json");
    let out = merge(&files, &total);
    assert!(out.status.success(), "{:?}", text(&out));
    let merged = read(&total);
    assert_eq!(merged.stats.requests, TOTAL, "completed");
    assert_eq!(merged.stats.errors.total(), 0, "{:?}", merged.stats.errors);
    // Every answer a 201: no 409 (a duplicate id) and no 400 (a body that is not the JSON sent).
    let created = merged.stats.status.0.get(&201).copied();
    assert_eq!(
        merged.stats.status.non_success(),
        0,
        "{:?}",
        merged.stats.status
    );
    assert_eq!(created, Some(TOTAL), "{:?}", merged.stats.status);

    // The table: one row per completed insert, ids 1..=300 each once.
    assert_eq!(
        http(orders.addr, "GET", "/orders/count", ""),
        (
            200,
            json!({"rows": TOTAL, "min": 1, "max": TOTAL, "distinct": TOTAL})
        )
    );
    // Each shard's first and last places (shard i takes i+1, i+4, …) read back with values
    // drawn in their ranges.
    for id in [1, 2, 3, 298, 299, 300] {
        let (status, row) = http(orders.addr, "GET", &format!("/orders/{id}"), "");
        assert_eq!(status, 200, "{id}: {row}");
        assert_eq!(row["id"], json!(id), "{row}");
        let item = row["item"].as_str().unwrap_or_default();
        assert!(ITEMS.contains(&item), "{row}");
        let qty = row["qty"].as_i64().unwrap_or_default();
        assert!((1..=5).contains(&qty), "{row}");
        let price = row["price_cents"].as_i64().unwrap_or_default();
        assert!((100..=9999).contains(&price), "{row}");
    }
    assert_eq!(http(orders.addr, "GET", "/orders/301", "").0, 404);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn orders_example_runs_through_bench_without_a_duplicate_id() {
    let programs = ["nginx", "php-fpm8.2", "mariadbd", "mariadb-install-db"];
    if !programs.iter().all(|p| crate::support::have(p)) {
        return;
    }
    let _busy = loading();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/orders.toml");
    let dir = tempdir("orders-bench");
    // A warm-up too: its requests take places of the same sequence, so the measured ones that
    // follow must not repeat an id it inserted (a repeat would answer 409).
    let args: Vec<&str> = "--duration 2s --warmup 1s --rounds 1 --cooldown 0s"
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
    assert_eq!(measured.len(), 1, "one load, one level, one round");
    let run = measured[0];
    assert!(run.stats.requests > 0, "nothing completed");
    assert_eq!(run.stats.errors.total(), 0, "{:?}", run.stats.errors);
    let status = &run.stats.status;
    assert_eq!(status.non_success(), 0, "{status:?}");
    assert_eq!(
        status.0.get(&201).copied(),
        Some(run.stats.requests),
        "{status:?}"
    );
}
