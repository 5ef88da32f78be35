//! The examples that run real application stacks from this machine's registries (issue 17):
//! Go net/http and gin (built from the Go module proxy), nginx with Debian's lua module, and
//! PHP-FPM behind nginx with MariaDB. Each runs briefly through `loadbench bench` with the checks
//! of `bench::run_example` (every step measured, no errors); a missing toolchain or module skips
//! the test with a message, except under `CI`, where `.ci/run` must have installed it.

use crate::bench::{run_example, run_example_rounds};
use loadbench_model::BenchResult;
use std::path::{Path, PathBuf};
use std::process::Command;

const LUA_MODULE: &str = "/usr/lib/nginx/modules/ngx_http_lua_module.so";

/// Whether `path` exists; like `support::have`, a skip outside CI and a failure under it.
fn have_file(path: &str, package: &str) -> bool {
    let found = Path::new(path).exists();
    if !found && std::env::var_os("CI").is_some() {
        panic!("{path} is missing, but CI must install {package} (see .ci/run)");
    }
    if !found {
        eprintln!("skipping: {path} is missing (apt-get install {package})");
    }
    found
}

/// Go on PATH or where the official tarball puts it (examples/targets/go-ping/build.sh looks
/// in both places).
fn have_go() -> bool {
    let on_path = Command::new("sh")
        .args(["-c", "command -v go"])
        .output()
        .is_ok_and(|o| o.status.success());
    on_path || have_file("/usr/local/go/bin/go", "Go 1.25+ (see .ci/run)")
}

fn example_target(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/targets")
        .join(name)
}

/// Every target of the scenario has a cell in every load that names it, and every answer of
/// every round was a 2xx or 3xx.
fn assert_every_target_measured(r: &BenchResult) {
    assert_every_target_measured_in(r, 1);
}

/// `assert_every_target_measured` for a run of `rounds` rounds.
fn assert_every_target_measured_in(r: &BenchResult, rounds: u32) {
    for round in r.rounds.iter().filter_map(|x| x.result.as_ref()) {
        let status = &round.stats.status;
        assert_eq!(status.non_success(), 0, "{}: {status:?}", round.config.url);
    }
    for (i, load) in r.loads.iter().enumerate() {
        for t in &load.targets {
            assert!(
                r.cells
                    .iter()
                    .any(|c| c.load == i as u32 && &c.target == t && c.rounds == rounds),
                "load {i}: no cell for {t}"
            );
        }
    }
}

#[test]
fn example_go_ping_runs_net_http_and_gin_and_caches_the_build() {
    if !have_go() {
        return;
    }
    let Some(r) = run_example("go-ping", &[]) else {
        return;
    };
    assert_every_target_measured(&r);
    let levels: Vec<_> = (0..5).filter_map(|l| r.cell_of(0, l, "gin")).collect();
    assert_eq!(levels.len(), 5, "gin at 5, 10, 15, 20 and 100 connections");
    // The scenario built the binary (or found it built): building again is a cache hit.
    let out = Command::new(example_target("go-ping").join("build.sh"))
        .output()
        .expect("build.sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("cached build"), "{stderr}");
    assert!(Path::new(String::from_utf8_lossy(&out.stdout).trim()).is_file());
}

#[test]
fn example_openresty_runs_lua_block_file_and_the_proxy_over_three() {
    if !have_file(LUA_MODULE, "libnginx-mod-http-lua") {
        return;
    }
    let Some(r) = run_example("openresty", &["nginx"]) else {
        return;
    };
    assert_every_target_measured(&r);
    let paths: Vec<&str> = r.loads.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(paths, ["/lua", "/lua-file", "/"]);
}

#[test]
fn example_php_mariadb_serves_a_page_that_queries_its_own_mariadb() {
    let programs = ["nginx", "php-fpm8.2", "mariadbd", "mariadb-install-db"];
    if !have_file(LUA_MODULE, "libnginx-mod-http-lua") {
        return;
    }
    // Three rounds: with one 1 s round per step on a loaded 2-core machine, lua once measured
    // below PHP; the best of three rounds is the seed's finding every time.
    let Some(r) = run_example_rounds("php-mariadb", &programs, 3) else {
        return;
    };
    assert_every_target_measured_in(&r, 3);
    // Every answer was a 2xx (checked above) and index.php throws, so answers 500, when its
    // connection or query fails: each request reached MariaDB.
    let db = r.targets.iter().find(|t| t.name == "mariadb").unwrap();
    assert!(db.command.contains("mariadb.sh"), "{}", db.command);
    // The seed's ordering: the lua endpoint serves more than PHP + MariaDB at each level.
    let best = |target: &str, level: u32| {
        r.rounds
            .iter()
            .filter(|x| x.target == target && x.level == level)
            .filter_map(|x| x.throughput())
            .fold(0.0, f64::max)
    };
    for level in 0..r.loads[0].levels.len() as u32 {
        let (lua, php) = (best("lua", level), best("php", level));
        assert!(
            php > 0.0 && lua > php,
            "level {level}: lua {lua:.0} req/s, php {php:.0}"
        );
    }
}
