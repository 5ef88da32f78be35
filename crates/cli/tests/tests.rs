//! The CLI's one integration-test binary (`autotests = false` in Cargo.toml): each file beside
//! this one is a module testing the real `loadbench` binary, `support` holds what they share.
//! One binary links once instead of once per file. Add a new test file by declaring it here; an
//! undeclared file is not compiled.
//!
//! All modules share one process. None changes process-wide state (signals go to the child
//! `loadbench` processes, never to this one). What sharing does change is who else uses the 2
//! cores: tests that check rates or timings take `support::measuring()`, so they never run
//! beside one that keeps the machine busy for seconds (`support::loading()`).

mod support;

mod agent;
mod bench;
mod ci_recipes;
mod dist;
mod docker;
mod docs;
mod example_apps;
mod fields;
mod find_max;
mod flows;
mod gates;
mod grpc;
mod h2;
mod h2_load;
mod h2_open;
mod h3;
mod headline;
mod help;
mod history;
mod imports;
mod input_files;
mod kubernetes;
mod library;
mod link;
mod live;
mod live_web;
mod manual;
mod metrics;
mod metrics_agent;
mod mix;
mod netns;
mod open;
mod orders;
mod pipeline;
mod pipeline_open;
mod pool;
mod protocols;
mod report;
mod run;
mod save;
mod schedule;
mod script;
mod serve;
mod serve_h2;
mod starved;
mod stdout;
mod tls;
mod transport;
mod values;
mod websocket;
mod why;
