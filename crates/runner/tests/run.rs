//! One load through `loadbench_runner::run`: the result is built in the library, counts match
//! the server's, and a spec mistake is a user error that names the fix.

use loadbench_plan::{LoadSpec, Stop};
use loadbench_runner::{Control, Quiet, RunError};
use loadbench_upstream::{Server, ServerConfig};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_closed_load_runs_in_process_and_every_request_reaches_the_server() {
    let server = Server::start(ServerConfig::ephemeral()).expect("backend starts");
    let url = format!("http://{}/", server.local_addr());
    let spec = LoadSpec {
        stop: Stop::Requests(200),
        threads: Some(1),
        ..LoadSpec::closed(&url, 4, Duration::from_secs(10))
    };
    let stop = Arc::new(AtomicBool::new(false));
    let r = loadbench_runner::run(
        &spec,
        Control {
            stop: &stop,
            observer: &Quiet,
        },
    )
    .unwrap();
    assert_eq!(r.stats.requests, 200);
    assert_eq!(r.config.requests, Some(200));
    assert_eq!(r.config.connections, 4);
    assert_eq!(server.stats().route("/"), 200);
    assert!(r.summary.is_some(), "the library finalizes the result");
}

#[test]
fn spec_mistakes_and_missing_targets_are_user_errors() {
    let stop = Arc::new(AtomicBool::new(false));
    let ctl = Control {
        stop: &stop,
        observer: &Quiet,
    };
    let zero = LoadSpec::closed("http://127.0.0.1:9/", 0, Duration::from_secs(1));
    let e = loadbench_runner::run(&zero, ctl).unwrap_err();
    assert!(matches!(e, RunError::Plan(_)) && e.is_user_error(), "{e}");
    assert!(e.to_string().contains("-c 1 or more"), "{e}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nobody = LoadSpec::closed(
        &format!("http://127.0.0.1:{port}/"),
        1,
        Duration::from_secs(1),
    );
    let e = loadbench_runner::run(&nobody, ctl).unwrap_err();
    assert!(
        matches!(e, RunError::Preflight(_)) && e.is_user_error(),
        "{e}"
    );
}
