//! Results saved by schema version 2 (real files, kept as they were written) still read, each
//! kind, upgraded to this schema: `report` and `compare` read them through the same
//! `SavedResult::from_json`.

use loadbench_model::{LoadShape, SavedResult, SCHEMA_VERSION};

const RUN_OPEN: &str = include_str!("fixtures/result-v2.json");
const RUN_OPEN_V3: &str = include_str!("fixtures/result-v3.json");
const RUN_CLOSED: &str = include_str!("../../cli/tests/fixtures/compare-base.json");
const FIND_MAX: &str = include_str!("../../cli/tests/fixtures/find-max.json");
const BENCH: &str = include_str!("../../cli/tests/fixtures/bench-base.json");
const BENCH_SWEEP: &str = include_str!("../../cli/tests/fixtures/bench-pool.json");

fn read(text: &str) -> SavedResult {
    assert!(text.contains("\"schema_version\": 2"), "a version 2 file");
    SavedResult::from_json(text).expect("a version 2 file reads")
}

#[test]
fn a_v2_run_reads_as_the_same_run_in_this_schema() {
    let old = read(RUN_OPEN);
    let new = SavedResult::from_json(RUN_OPEN_V3).unwrap();
    assert_eq!(old, new);
    let run = old.as_run().unwrap();
    assert_eq!(run.schema_version, SCHEMA_VERSION);
    assert!(matches!(run.config.load, LoadShape::Open { .. }));
}

#[test]
fn a_v2_closed_run_gets_its_connections_in_its_shape() {
    let saved = read(RUN_CLOSED);
    let run = saved.as_run().unwrap();
    assert_eq!(
        run.config.load,
        LoadShape::Closed {
            connections: run.config.connections
        }
    );
    assert_eq!(run.config.connections, 8);
}

#[test]
fn a_v2_find_max_reads_with_every_step() {
    let saved = read(FIND_MAX);
    let f = saved.as_find_max().unwrap();
    assert_eq!(f.schema_version, SCHEMA_VERSION);
    assert!(!f.steps.is_empty());
    for step in &f.steps {
        assert!(matches!(step.run.config.load, LoadShape::Open { .. }));
    }
    assert_eq!(f.slo.text, "p99<50ms");
}

#[test]
fn a_v2_bench_reads_with_typed_levels_and_its_queueing_rebuilt() {
    let saved = read(BENCH);
    let b = saved.as_bench().unwrap();
    let levels: Vec<String> = (0..b.loads[0].levels.len())
        .map(|l| b.loads[0].level_label(l))
        .collect();
    assert_eq!(levels, ["c=50", "c=200"]);
    assert_eq!(b.loads[0].levels[0], LoadShape::Closed { connections: 50 });
    assert!(!b.cells.is_empty());

    let sweep = read(BENCH_SWEEP);
    let b = sweep.as_bench().unwrap();
    assert_eq!(b.loads[0].levels.len(), 5);
    let q = &b.queueing[0];
    assert!(q.closed, "{q:?}");
    assert_eq!(q.levels.len(), 5);
    let value: serde_json::Value = serde_json::from_str(&sweep.to_json()).unwrap();
    assert_eq!(value["schema_version"], SCHEMA_VERSION);
    assert_eq!(value["loads"][0]["levels"][2]["connections"], 20);
}
