//! Shards through `loadbench_runner::run_shard` against the in-process reference backend:
//! three shards started at one instant send exactly the whole load, record how late they
//! started, and merge into the whole; mistakes are refused before any request is sent.

use loadbench_model::merge_shards;
use loadbench_plan::{LoadSpec, Shard, Stop};
use loadbench_runner::{run_shard, Control, Quiet, ShardRunError, ShardSpec};
use loadbench_upstream::{Server, ServerConfig};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn spec(url: &str) -> LoadSpec {
    LoadSpec {
        stop: Stop::Requests(301),
        threads: Some(1),
        ..LoadSpec::closed(url, 5, Duration::from_secs(10))
    }
}

fn shard_spec(i: u32, start_at: Option<SystemTime>) -> ShardSpec {
    ShardSpec {
        shard: Shard::new(i, 3).unwrap(),
        run_id: "t-1".into(),
        start_at,
    }
}

/// Runs shards 0, 1 and 2 of 3 of `spec` on their own threads, all starting at `at`, as
/// three load hosts would.
fn three_shards_at(spec: &LoadSpec, at: SystemTime) -> Vec<loadbench_model::RunResult> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let sh = shard_spec(i, Some(at));
                s.spawn(move || {
                    let stop = Arc::new(AtomicBool::new(false));
                    let ctl = Control {
                        stop: &stop,
                        observer: &Quiet,
                    };
                    run_shard(spec, &sh, ctl).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn three_shards_started_together_send_the_whole_load_and_merge() {
    let server = Server::start(ServerConfig::ephemeral()).expect("backend starts");
    let spec = spec(&format!("http://{}/", server.local_addr()));
    let at = SystemTime::now() + Duration::from_millis(700);
    let results = three_shards_at(&spec, at);
    let at_ns = at.duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
    for (i, r) in results.iter().enumerate() {
        let run = r.shards.as_ref().unwrap();
        assert_eq!((run.run_id.as_str(), run.total), ("t-1", 3));
        assert_eq!(run.start_at_unix_ns, Some(at_ns));
        let me = &run.shards[0];
        assert_eq!(me.index, i as u32);
        assert!(me.start_offset_ns.unwrap() >= 0, "no shard starts early");
        assert_eq!(r.config.requests, Some([101, 100, 100][i]));
        assert_eq!(r.config.connections, [2, 2, 1][i]);
    }
    let m = merge_shards(&results).unwrap();
    assert_eq!(m.stats.requests + m.stats.errors.total(), 301);
    assert_eq!(server.stats().route("/"), m.stats.requests);
    assert_eq!((m.config.requests, m.config.connections), (Some(301), 5));
    let starts: Vec<u64> = results
        .iter()
        .map(|r| r.shards.as_ref().unwrap().shards[0].started_at_unix_ns)
        .collect();
    let skew = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert_eq!(m.shards.unwrap().start_skew_ns, skew);
}

#[test]
fn mistakes_are_refused_before_any_request() {
    let server = Server::start(ServerConfig::ephemeral()).expect("backend starts");
    let spec = spec(&format!("http://{}/", server.local_addr()));
    let stop = Arc::new(AtomicBool::new(false));
    let ctl = Control {
        stop: &stop,
        observer: &Quiet,
    };
    let late = SystemTime::now() - Duration::from_secs(60);
    let e = run_shard(&spec, &shard_spec(0, Some(late)), ctl).unwrap_err();
    assert!(
        matches!(e, ShardRunError::StartAt(_)) && e.is_user_error(),
        "{e}"
    );
    let too_many = ShardSpec {
        shard: Shard::new(0, 6).unwrap(),
        ..shard_spec(0, None)
    };
    let e = run_shard(&spec, &too_many, ctl).unwrap_err();
    assert!(
        e.to_string().contains("-c 5 cannot be split into 6 shards"),
        "{e}"
    );
    let bad_id = ShardSpec {
        run_id: "../x".into(),
        ..shard_spec(0, None)
    };
    let e = run_shard(&spec, &bad_id, ctl).unwrap_err();
    assert!(e.to_string().starts_with("--run-id '../x'"), "{e}");
    assert_eq!(server.stats().route("/"), 0, "nothing was sent");
}

#[test]
fn open_model_shards_send_the_whole_schedule_between_them() {
    let server = Server::start(ServerConfig::ephemeral()).expect("backend starts");
    let url = format!("http://{}/", server.local_addr());
    // `--rate 300 -n 150 --max-connections 6`: 150 requests due over half a second.
    let spec = LoadSpec {
        stop: loadbench_plan::Stop::Requests(150),
        threads: Some(1),
        ..LoadSpec::open(&url, 300.0, Duration::from_millis(500), 6)
    };
    let at = SystemTime::now() + Duration::from_millis(500);
    let results = three_shards_at(&spec, at);
    for r in &results {
        assert_eq!(r.config.requests, Some(50));
        let loadbench_model::LoadShape::Open {
            schedule,
            max_connections,
        } = &r.config.load
        else {
            panic!("open")
        };
        assert_eq!(
            (schedule[0].from_rate, *max_connections),
            (300.0, 2),
            "whole rate, shared cap"
        );
    }
    let m = merge_shards(&results).unwrap();
    assert_eq!(m.stats.requests + m.stats.errors.total(), 150);
    assert_eq!(server.stats().route("/"), m.stats.requests);
    assert_eq!(m.config.requests, Some(150));
}
