//! Merging shard results (issue 15): exact, associative to the byte, series aligned on
//! wall-clock seconds, and every mismatch refused with one line.

use loadbench_model::{merge_shards, MergeError, RunResult, ShardRun, ShardStart};

const FIXTURE: &str = include_str!("fixtures/result-v3.json");
const START: u64 = 1_795_543_200_000_000_000;

/// Shard `index` of 3 of run `run`, started `late_ns` after the planned start.
fn shard(index: u32, late_ns: u64, run: &str) -> RunResult {
    let mut r = RunResult::from_json(FIXTURE).unwrap();
    r.shards = Some(ShardRun {
        run_id: run.into(),
        total: 3,
        start_at: Some("2026-11-24T18:00:00.000000000Z".into()),
        start_at_unix_ns: Some(START),
        shards: vec![ShardStart {
            index,
            hostname: format!("host-{index}"),
            started_at: String::new(),
            started_at_unix_ns: START + late_ns,
            start_offset_ns: Some(late_ns as i64),
            interrupted: false,
        }],
        start_skew_ns: 0,
    });
    r
}

fn three() -> [RunResult; 3] {
    [
        shard(0, 2_000_000, "r1"),
        shard(1, 1_500_000_000, "r1"),
        shard(2, 900_000, "r1"),
    ]
}

#[test]
fn merge_adds_everything_and_records_the_shards_and_skew() {
    let [a, b, c] = three();
    let m = merge_shards(&[a.clone(), b, c]).unwrap();
    let s = &m.stats;
    assert_eq!(s.requests, 3 * a.stats.requests);
    assert_eq!(s.latency.hist.len(), 3 * a.stats.latency.hist.len());
    assert_eq!(s.errors.total(), 3 * a.stats.errors.total());
    assert_eq!(m.config.connections, 3 * a.config.connections);
    let run = m.shards.as_ref().unwrap();
    let idx: Vec<u32> = run.shards.iter().map(|s| s.index).collect();
    assert_eq!(idx, vec![0, 1, 2]);
    assert!(run.missing().is_empty());
    assert_eq!(run.start_skew_ns, 1_500_000_000 - 900_000);
    let hosts: Vec<&str> = run.shards.iter().map(|s| s.hostname.as_str()).collect();
    assert_eq!(hosts, vec!["host-0", "host-1", "host-2"]);
    // Shard 1 started in the next wall-clock second: its points move one second later.
    let per_second: u64 = s.series.0.iter().map(|p| p.requests).sum();
    assert_eq!(per_second, s.requests);
    let first = &a.stats.series.0[0];
    assert_eq!(s.series.0[0].requests, 2 * first.requests);
    assert_eq!(s.elapsed_us, a.stats.elapsed_us + 1_000_000);
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn merging_is_associative_to_the_byte() {
    let [a, b, c] = three();
    let ab = merge_shards(&[a.clone(), b.clone()]).unwrap();
    let bc = merge_shards(&[b.clone(), c.clone()]).unwrap();
    let left = merge_shards(&[ab, c.clone()]).unwrap();
    let right = merge_shards(&[a.clone(), bc]).unwrap();
    let flat = merge_shards(&[c, a, b]).unwrap();
    assert_eq!(
        left.stats.latency.hist.to_base64(),
        right.stats.latency.hist.to_base64()
    );
    assert_eq!(json(&left), json(&right));
    assert_eq!(json(&left.shards.unwrap()), json(&flat.shards.unwrap()));
    assert_eq!(json(&right.stats), json(&flat.stats));
}

#[test]
fn mismatches_are_refused_and_missing_shards_named() {
    let [a, b, _] = three();
    let e = merge_shards(&[a.clone(), shard(1, 0, "other")]).unwrap_err();
    assert!(matches!(e, MergeError::RunId { at: 2, .. }), "{e}");
    let e = merge_shards(&[a.clone(), a.clone()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "shard 0/3 appears twice (result 2): give each shard's result once"
    );
    let mut odd = b.clone();
    odd.config.url = "http://elsewhere/".into();
    let e = merge_shards(&[a.clone(), odd]).unwrap_err().to_string();
    assert!(e.contains("(url differs)") && !e.contains('\n'), "{e}");
    let mut share = b.clone();
    share.config.connections += 1;
    assert!(
        merge_shards(&[a.clone(), share]).is_ok(),
        "the share may differ"
    );
    let mut plain = b.clone();
    plain.shards = None;
    assert_eq!(
        merge_shards(&[a.clone(), plain]).unwrap_err(),
        MergeError::NotAShard(2)
    );
    let m = merge_shards(&[a.clone(), b]).unwrap();
    assert_eq!(m.shards.as_ref().unwrap().missing(), vec![2]);
    let line = m.shards.unwrap().describe();
    assert!(line.starts_with("2 of 3 shards of run r1 merged, start skew 1498.000 ms (hosts: 0@host-0, 1@host-1); MISSING shards 2"), "{line}");
    let one = a.shards.unwrap().describe();
    assert_eq!(
        one,
        "shard 0/3 of run r1, started 2.000 ms after its start time"
    );
}

#[test]
fn a_merged_result_reads_back_as_it_was_written() {
    let m = merge_shards(&three()).unwrap();
    let back = RunResult::from_json(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back, m);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

    /// Whatever the shards' start offsets (up to 4 s late, so some land in later seconds),
    /// both groupings give the same bytes, and the series still hold every request.
    #[test]
    fn any_start_offsets_merge_associatively(
        late in proptest::collection::vec(0u64..4_000_000_000, 3)
    ) {
        let [a, b, c] = [0, 1, 2].map(|i| shard(i, late[i as usize], "r1"));
        let left = merge_shards(&[merge_shards(&[a.clone(), b.clone()]).unwrap(), c.clone()]).unwrap();
        let right = merge_shards(&[a, merge_shards(&[b, c]).unwrap()]).unwrap();
        proptest::prop_assert_eq!(json(&left), json(&right));
        let per_second: u64 = left.stats.series.0.iter().map(|p| p.requests).sum();
        proptest::prop_assert_eq!(per_second, left.stats.requests);
        let skew = late.iter().max().unwrap() - late.iter().min().unwrap();
        proptest::prop_assert_eq!(left.shards.unwrap().start_skew_ns, skew);
    }
}

#[test]
fn an_interrupted_shard_is_flagged_in_the_merge_and_its_line_and_stays_flagged() {
    let [a, mut b, c] = three();
    b.interrupted = true;
    let m = merge_shards(&[a.clone(), b.clone(), c.clone()]).unwrap();
    assert!(m.interrupted, "the merge of a cut-short shard is partial");
    let run = m.shards.clone().unwrap();
    assert_eq!(run.interrupted(), vec![1]);
    let flags: Vec<bool> = run.shards.iter().map(|s| s.interrupted).collect();
    assert_eq!(flags, [false, true, false]);
    assert!(
        run.describe()
            .ends_with("; INTERRUPTED shards 1 (partial counts)"),
        "{}",
        run.describe()
    );
    // Merging the merge again keeps the flag on shard 1 only, whatever the grouping.
    let ab = merge_shards(&[a.clone(), b]).unwrap();
    let again = merge_shards(&[ab, c]).unwrap();
    assert_eq!(again.shards.unwrap().interrupted(), vec![1]);
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(json.matches("\"interrupted\":true").count(), 2, "{json}");
    // A whole shard writes no flag (an additive field).
    let clean = merge_shards(&[a]).unwrap();
    assert!(clean.shards.unwrap().interrupted().is_empty());
}
