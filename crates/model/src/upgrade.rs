//! Older saved results, brought up to this schema before they are read, so `report` and
//! `compare` keep reading every file a supported loadbench wrote (docs/result-schema.md,
//! "Versioning"). Each step rewrites the JSON of one version into the next; a document that
//! does not fit its kind is left as it is, for the typed reader to report.
//!
//! 2 → 3: the shape of a load is one type ([`crate::LoadShape`]). A run's closed `config.load`
//! gains its `connections`; a bench load's `levels` become shapes (from its `model`, its
//! number levels, `slo` and `max_connections`, which go); the derived `queueing` is dropped
//! (it is rebuilt when read).

use crate::load::DEFAULT_MAX_CONNECTIONS;
use crate::result::{ResultKind, SCHEMA_VERSION};
use serde_json::{json, Map, Value};

/// Rewrites a document of schema `version` (2 or later) of `kind` into this schema.
pub(crate) fn upgrade(kind: ResultKind, version: u64, doc: &mut Value) {
    if version == 2 {
        from_v2(kind, doc);
    }
}

fn from_v2(kind: ResultKind, doc: &mut Value) {
    match kind {
        ResultKind::Run => run(doc),
        ResultKind::FindMax => find_max(doc),
        ResultKind::Bench => bench(doc),
    }
    stamp(doc);
}

/// The document now says this schema's version.
fn stamp(doc: &mut Value) {
    if let Some(v) = doc.get_mut("schema_version") {
        *v = json!(SCHEMA_VERSION);
    }
}

/// A run: a closed load's shape holds its connections.
fn run(doc: &mut Value) {
    stamp(doc);
    let Some(config) = doc.get_mut("config").and_then(Value::as_object_mut) else {
        return;
    };
    let connections = config.get("connections").cloned();
    let Some(load) = config.get_mut("load").and_then(Value::as_object_mut) else {
        return;
    };
    if load.get("model").and_then(Value::as_str) == Some("closed") {
        if let Some(c) = connections {
            load.entry("connections").or_insert(c);
        }
    }
}

/// A search: every step's run.
fn find_max(doc: &mut Value) {
    stamp(doc);
    if let Some(steps) = doc.get_mut("steps").and_then(Value::as_array_mut) {
        for step in steps {
            if let Some(r) = step.get_mut("run") {
                run(r);
            }
        }
    }
}

/// A bench: its loads' levels as shapes, every round's run or search.
fn bench(doc: &mut Value) {
    let slos = find_max_slos(doc);
    if let Some(loads) = doc.get_mut("loads").and_then(Value::as_array_mut) {
        for (i, load) in loads.iter_mut().enumerate() {
            if let Some(load) = load.as_object_mut() {
                bench_load(load, slos.iter().find(|(l, _)| *l == i).map(|(_, s)| s));
            }
        }
    }
    if let Some(doc) = doc.as_object_mut() {
        doc.remove("queueing");
    }
    if let Some(rounds) = doc.get_mut("rounds").and_then(Value::as_array_mut) {
        for round in rounds {
            if let Some(r) = round.get_mut("result") {
                run(r);
            }
            if let Some(f) = round.get_mut("find_max") {
                find_max(f);
            }
        }
    }
}

/// The typed SLO of each find-max load, from the first round of it whose search was saved
/// (version 2 kept only the SLO's text on the load).
fn find_max_slos(doc: &Value) -> Vec<(usize, Value)> {
    let mut out: Vec<(usize, Value)> = Vec::new();
    for round in doc["rounds"].as_array().into_iter().flatten() {
        let (Some(load), Some(slo)) = (round["load"].as_u64(), round["find_max"].get("slo")) else {
            continue;
        };
        let load = load as usize;
        if !out.iter().any(|(l, _)| *l == load) {
            out.push((load, slo.clone()));
        }
    }
    out
}

/// One bench load: `model`, `levels` (numbers), `slo` and `max_connections` become `levels`
/// (shapes).
fn bench_load(load: &mut Map<String, Value>, slo: Option<&Value>) {
    let Some(model) = load
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    let max_connections = load
        .get("max_connections")
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(DEFAULT_MAX_CONNECTIONS));
    let duration_ms = load.get("duration_ms").cloned().unwrap_or(json!(0));
    let numbers: Vec<Value> = load
        .get("levels")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let levels: Option<Vec<Value>> = match model.as_str() {
        "closed" => numbers
            .iter()
            .map(|n| whole(n).map(|c| json!({"model": "closed", "connections": c})))
            .collect(),
        "open" => Some(
            numbers
                .iter()
                .map(|r| {
                    json!({
                        "model": "open",
                        "schedule": [{"duration_ms": duration_ms, "from_rate": r, "to_rate": r}],
                        "max_connections": max_connections,
                    })
                })
                .collect(),
        ),
        "find_max" => {
            let text = load.get("slo").cloned().unwrap_or(json!(""));
            let slo = slo
                .cloned()
                .unwrap_or_else(|| json!({"text": text, "conditions": []}));
            Some(vec![json!({
                "model": "find_max",
                "slo": slo,
                "max_connections": max_connections,
            })])
        }
        _ => None,
    };
    let Some(levels) = levels else {
        return;
    };
    for key in ["model", "slo", "max_connections"] {
        load.remove(key);
    }
    load.insert("levels".into(), Value::Array(levels));
}

/// A connection count written as a number (`10.0` in version 2), when it is a whole one.
fn whole(n: &Value) -> Option<u64> {
    if let Some(c) = n.as_u64() {
        return Some(c);
    }
    let f = n.as_f64()?;
    let c = f as u64;
    (c as f64 == f).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_bench_load_becomes_shapes() {
        let mut doc = json!({
            "schema_version": 2,
            "loads": [
                {"name": "c", "model": "closed", "levels": [5.0, 10.0], "duration_ms": 1000},
                {"name": "o", "model": "open", "levels": [250.0], "max_connections": 8,
                 "duration_ms": 2000},
                {"name": "f", "model": "find_max", "levels": [0.0], "slo": "p99<50ms",
                 "duration_ms": 1000},
                {"name": "odd", "model": "closed", "levels": [1.5], "duration_ms": 1000},
            ],
            "queueing": [{"model": "closed"}],
            "rounds": [],
        });
        from_v2(ResultKind::Bench, &mut doc);
        assert_eq!(doc["schema_version"], 3);
        assert!(doc.get("queueing").is_none());
        let loads = &doc["loads"];
        assert_eq!(
            loads[0]["levels"],
            json!([{"model": "closed", "connections": 5}, {"model": "closed", "connections": 10}])
        );
        assert!(loads[0].get("model").is_none());
        assert_eq!(loads[1]["levels"][0]["schedule"][0]["duration_ms"], 2000);
        assert_eq!(loads[1]["levels"][0]["max_connections"], 8);
        assert!(loads[1].get("max_connections").is_none());
        assert_eq!(loads[2]["levels"][0]["slo"]["text"], "p99<50ms");
        assert_eq!(loads[2]["levels"][0]["max_connections"], 10_000);
        // Not a count of connections: left for the reader to refuse.
        assert_eq!(loads[3]["levels"], json!([1.5]));
    }

    #[test]
    fn a_v2_closed_run_gains_its_connections() {
        let mut doc = json!({
            "schema_version": 2,
            "config": {"connections": 8, "load": {"model": "closed"}},
        });
        from_v2(ResultKind::Run, &mut doc);
        assert_eq!(
            doc["config"]["load"],
            json!({"model": "closed", "connections": 8})
        );
        assert_eq!(doc["schema_version"], 3);
    }
}
