//! Guards the JSON result schema (docs/result-schema.md) with a golden file: a real result saved
//! by `loadbench run` (tests/fixtures/result-v3.json, the open-model run of result-v2.json as
//! schema 3 writes it). Renaming, dropping, adding or retyping a field changes the set of key
//! paths that `RunResult` writes and fails here; such a change needs a new fixture, an update of
//! docs/result-schema.md and, if a field changed meaning or was removed, a new `SCHEMA_VERSION`.

use loadbench_model::{ResultKind, ResultReadError, RunResult, SavedResult, SCHEMA_VERSION};
use serde_json::Value;
use std::collections::BTreeMap;

const FIXTURE: &str = include_str!("fixtures/result-v3.json");

/// Maps whose keys are data (status codes, error classes), not schema.
const DATA_KEYED_MAPS: [&str; 4] = [
    "stats.status",
    "stats.errors",
    "stats.error_reasons",
    "summary.status_per_sec",
];

fn fixture() -> RunResult {
    RunResult::from_json(FIXTURE).expect("the fixture is a valid result")
}

fn fixture_value() -> Value {
    serde_json::from_str(FIXTURE).expect("the fixture is JSON")
}

/// Every key path of a JSON document with the kind of value found there: `stats.series[].hdr`
/// → `string`. Array elements collapse to `[]`, keys of data-keyed maps to `*`.
fn key_paths(value: &Value) -> BTreeMap<String, &'static str> {
    let mut out = BTreeMap::new();
    walk(value, String::new(), &mut out);
    out
}

fn walk(value: &Value, path: String, out: &mut BTreeMap<String, &'static str>) {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(items) => {
            for item in items {
                walk(item, format!("{path}[]"), out);
            }
            "array"
        }
        Value::Object(map) => {
            let data_keyed = DATA_KEYED_MAPS.contains(&path.as_str());
            for (key, child) in map {
                let key = if data_keyed { "*" } else { key.as_str() };
                let child_path = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                };
                walk(child, child_path, out);
            }
            "object"
        }
    };
    if !path.is_empty() {
        out.insert(path, kind);
    }
}

#[test]
fn fixture_reads_back_with_consistent_figures() {
    let r = fixture();
    let s = &r.stats;
    assert_eq!(r.schema_version, SCHEMA_VERSION);
    assert!(s.requests > 0, "the fixture should hold a real measurement");
    assert!(s.elapsed_us > 0);
    assert_eq!(s.latency.hist.len(), s.requests, "latency histogram count");
    assert_eq!(
        s.status.0.values().sum::<u64>(),
        s.requests,
        "status counts"
    );
    assert!(!s.connect.hist.is_empty() && s.connections_opened > 0);
    assert!(!s.series.0.is_empty());
    let series_requests: u64 = s.series.0.iter().map(|p| p.requests).sum();
    let series_errors: u64 = s.series.0.iter().map(|p| p.errors).sum();
    let series_hist: u64 = s.series.0.iter().map(|p| p.histogram().len()).sum();
    assert_eq!(series_requests, s.requests, "series requests");
    assert_eq!(series_hist, s.requests, "series histogram counts");
    assert_eq!(series_errors, s.errors.total(), "series errors");
    let bytes_read: u64 = s.series.0.iter().map(|p| p.bytes_read).sum();
    assert_eq!(bytes_read, s.bytes_read, "series bytes_read");
}

#[test]
fn derived_figures_are_recomputed_on_load_not_trusted() {
    let mut v = fixture_value();
    v["summary"]["requests_per_sec"] = 1.0e9.into();
    v["summary"]["errors"] = 123_456.into();
    v["stats"]["latency"]["count"] = 7.into();
    v["stats"]["latency"]["max_us"] = 0.0.into();
    let tampered = RunResult::from_json(&v.to_string()).unwrap();
    let original = fixture();
    assert_eq!(tampered, original);
    let summary = tampered.summary.expect("from_json fills the summary");
    let expected = original.stats.requests as f64 / original.stats.elapsed_secs();
    assert!((summary.requests_per_sec - expected).abs() < 1e-6);
    assert_eq!(summary.errors, original.stats.errors.total());
}

#[test]
fn serialized_key_paths_match_the_golden_file() {
    let golden = key_paths(&fixture_value());
    let written = key_paths(&serde_json::to_value(fixture()).unwrap());
    let missing: Vec<_> = golden
        .keys()
        .filter(|k| !written.contains_key(*k))
        .collect();
    let added: Vec<_> = written
        .keys()
        .filter(|k| !golden.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty() && added.is_empty(),
        "the result schema changed: no longer written {missing:?}, newly written {added:?}; \
         update docs/result-schema.md and tests/fixtures/result-v3.json (and SCHEMA_VERSION if \
         a field changed meaning or was removed)"
    );
    let retyped: Vec<_> = golden
        .iter()
        .filter(|(k, kind)| written[k.as_str()] != **kind)
        .map(|(k, kind)| format!("{k}: {kind} -> {}", written[k.as_str()]))
        .collect();
    assert!(retyped.is_empty(), "field types changed: {retyped:?}");
    for path in [
        "schema_version",
        "config.load.model",
        "stats.errors.*",
        "stats.status.*",
        "stats.latency.hdr",
        "stats.latency.percentiles[].us",
        "stats.series[].hdr",
        "summary.per_second_rate.mean",
    ] {
        assert!(golden.contains_key(path), "{path} missing from the fixture");
    }
}

#[test]
fn round_trips_exactly() {
    let r = fixture();
    let text = serde_json::to_string_pretty(&r).unwrap();
    assert_eq!(RunResult::from_json(&text).unwrap(), r);
}

/// `SavedResult` is no wrapper: a run read as any kind writes the same bytes as the run itself.
#[test]
fn saved_result_writes_exactly_the_runs_json() {
    let saved = SavedResult::from_json(FIXTURE).expect("the fixture reads as a saved result");
    assert_eq!(saved.kind(), ResultKind::Run);
    assert_eq!(saved.as_run(), Some(&fixture()));
    let text = saved.to_json();
    assert_eq!(
        text,
        serde_json::to_string_pretty(&fixture()).unwrap() + "\n"
    );
    assert_eq!(SavedResult::from_json(&text).unwrap(), saved);
}

#[test]
fn other_schema_versions_are_rejected_with_a_clear_error() {
    let mut v = fixture_value();
    v["schema_version"] = (u64::from(SCHEMA_VERSION) + 1).into();
    let err = RunResult::from_json(&v.to_string()).unwrap_err();
    assert!(
        matches!(err, ResultReadError::Version(n) if n == u64::from(SCHEMA_VERSION) + 1),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("schema_version {}", SCHEMA_VERSION + 1))
            && msg.contains(&format!("it reads 2 to {SCHEMA_VERSION}")),
        "{msg}"
    );
}

#[test]
fn non_results_are_rejected_with_a_clear_error() {
    let err = RunResult::from_json(r#"{"requests": 10, "latency": []}"#).unwrap_err();
    assert!(matches!(err, ResultReadError::NotAResult), "{err:?}");
    assert!(err.to_string().contains("not a loadbench result"), "{err}");

    let err = RunResult::from_json("Running 10s test @ http://127.0.0.1/").unwrap_err();
    assert!(matches!(err, ResultReadError::NotJson(_)), "{err:?}");
    assert!(err.to_string().starts_with("not JSON"), "{err}");

    let mut v = fixture_value();
    v["stats"].as_object_mut().unwrap().remove("requests");
    let err = RunResult::from_json(&v.to_string()).unwrap_err();
    assert!(matches!(err, ResultReadError::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("requests"), "{err}");

    let mut v = fixture_value();
    v["stats"]["latency"]["hdr"] = "not a histogram".into();
    let err = RunResult::from_json(&v.to_string()).unwrap_err();
    assert!(
        err.to_string().contains("invalid latency histogram"),
        "{err}"
    );
}

/// Regression: per-second histograms were accepted unchecked and their stored p50/p99 trusted.
#[test]
fn corrupt_series_points_are_rejected_and_percentiles_recomputed() {
    let mut v = fixture_value();
    v["stats"]["series"][0]["hdr"] = "AAAA".into();
    let err = RunResult::from_json(&v.to_string()).unwrap_err();
    assert!(err.to_string().contains("stats.series"), "{err}");

    let mut v = fixture_value();
    let stored = v["stats"]["series"][0]["p99_us"].as_f64().unwrap();
    v["stats"]["series"][0]["p99_us"] = (stored + 12345.0).into();
    let r = RunResult::from_json(&v.to_string()).unwrap();
    assert_eq!(r.stats.series.0[0].p99_us, stored);
}
