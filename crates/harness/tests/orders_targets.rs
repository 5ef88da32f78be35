//! Starting `examples/orders.toml`'s targets (MariaDB, PHP-FPM and nginx) in a test, through
//! the real harness as `loadbench bench` starts them, without load ([`start_orders`]), and
//! asking them with plain HTTP ([`http`]). Shared by the harness's `orders` tests and the CLI's
//! (`crates/cli/tests/support/mod.rs` includes this file by path).
//!
//! A missing program skips the test with a message, except under `CI`, where `.ci/run` must
//! have installed it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use loadbench_harness::scenario::Scenario;
use loadbench_harness::targets::{StartOptions, Targets};
use serde_json::Value;

/// The programs the orders targets run (mariadb.sh runs the two MariaDB ones from `PATH`).
const PROGRAMS: [&str; 4] = ["nginx", "php-fpm8.2", "mariadbd", "mariadb-install-db"];

/// The running targets of `examples/orders.toml`; dropping it stops them and removes its run
/// folder.
pub(crate) struct OrdersTargets {
    /// The started targets, by name: `mariadb`, `php-fpm` and `orders` (nginx).
    pub(crate) targets: Targets,
    /// Where nginx answers `/orders` (the `orders` target).
    pub(crate) addr: SocketAddr,
    run_dir: PathBuf,
}

impl Drop for OrdersTargets {
    fn drop(&mut self) {
        self.targets.stop();
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}

/// Whether `program` is on `PATH` or in `/usr/sbin`; a missing one fails under `CI`.
fn have(program: &str) -> bool {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/sbin")])
        .any(|dir| dir.join(program).is_file());
    if !on_path && std::env::var_os("CI").is_some() {
        panic!("{program} is missing, but CI must install it (see .ci/run)");
    }
    if !on_path {
        eprintln!("skipping: {program} is missing (apt-get install nginx php-fpm php-mysql mariadb-server)");
    }
    on_path
}

/// Starts `examples/orders.toml`'s targets in a fresh run folder under the system's temporary
/// directory and waits until each is ready (nginx when `/orders/count` answers through PHP-FPM
/// from MariaDB). `None` when a program is missing (outside `CI`).
pub(crate) fn start_orders() -> Option<OrdersTargets> {
    if !PROGRAMS.iter().all(|p| have(p)) {
        return None;
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/orders.toml");
    let scenario = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let run_dir = std::env::temp_dir().join(format!("lb-orders-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&run_dir).unwrap();
    let opts = StartOptions {
        file,
        run_dir: run_dir.clone(),
        // Only `kind = "upstream"` targets run it; the orders targets are commands.
        upstream_exe: PathBuf::from("loadbench"),
        host_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let targets = Targets::start(&scenario, &opts).unwrap_or_else(|e| panic!("{e}"));
    let port = targets.get("orders").expect("the orders target").info.port;
    Some(OrdersTargets {
        targets,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        run_dir,
    })
}

/// One HTTP/1.1 request with `Connection: close`: the status and the body as JSON (nginx
/// sends PHP's answers chunked).
pub(crate) fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: orders\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = (head.lines()).any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    (status, value)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}
