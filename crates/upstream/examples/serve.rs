//! Runs the reference backend without the CLI, for profiling and benchmarking this crate alone:
//! `cargo run --release -p loadbench-upstream --example serve -- 127.0.0.1:8080 1`
//! (address, then worker threads). Stops gracefully on Ctrl-C or SIGTERM.

use loadbench_upstream::{run_until_signal, ServerConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut cfg = ServerConfig::default();
    if let Some(listen) = args.next() {
        cfg.listen = listen
            .parse()
            .expect("the first argument is an address like 127.0.0.1:8080");
    }
    if let Some(threads) = args.next() {
        cfg.threads = threads
            .parse()
            .expect("the second argument is a thread count");
    }
    if let Err(e) = run_until_signal(cfg) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
