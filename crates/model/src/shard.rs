//! Shards of one distributed run and their exact merge (issue 15, docs/distributed.md).
//!
//! A shard's result carries a [`ShardRun`]: the run id, the number of shards, the planned
//! common start and one [`ShardStart`] (its index, host and actual start). [`merge_shards`]
//! adds shard results with the same [`Stats::merge`] the engine uses for its workers, after
//! moving each shard's per-second series onto a common wall-clock second (series second 0 of
//! a shard is its own start; of the merge, the earliest shard's). A merged result is again a
//! `RunResult` whose `ShardRun` lists every shard, so merging is associative: merging merged
//! results gives byte-identical histograms whatever the grouping.

use crate::load::LoadShape;
use crate::result::{RunConfig, RunResult};
use serde::{Deserialize, Serialize};

/// Which distributed run a result belongs to and how its shards started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRun {
    /// The run id every shard of the run was given (`--run-id`).
    pub run_id: String,
    /// How many shards the run was split into.
    pub total: u32,
    /// The planned common start (`--start-at`), RFC 3339 UTC with nanoseconds; absent when
    /// the shards were started without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// The same instant, nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ns: Option<u64>,
    /// The shards in this result, by index: one in a shard's own result, all in a merge.
    pub shards: Vec<ShardStart>,
    /// Latest minus earliest actual start of the shards here, ns (0 for one shard).
    pub start_skew_ns: u64,
}

/// One shard: where it ran and when it actually started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardStart {
    /// 0-based shard index.
    pub index: u32,
    /// The load host's name.
    pub hostname: String,
    /// When the load actually started (after waiting for `start_at`), RFC 3339 UTC, ns.
    pub started_at: String,
    /// The same instant, nanoseconds since the Unix epoch.
    pub started_at_unix_ns: u64,
    /// `started_at` minus `start_at`, ns (how late this shard started); absent without a
    /// planned start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset_ns: Option<i64>,
    /// The shard was cut short (Ctrl-C, SIGTERM, the scheduler's kill or timeout): its counts
    /// cover less than its share of the load. Absent when false. A merge takes it from each
    /// one-shard result's own `interrupted`, so files written before the field say it too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// Why shard results cannot be merged; one line naming the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no results to merge: give the shard result files")]
    Empty,
    /// A result that is not a shard's.
    #[error(
        "result {0} is not a shard result (no run id): merge only results written with --shard"
    )]
    NotAShard(usize),
    /// Results of different runs.
    #[error("result {at} belongs to run '{found}', result 1 to run '{want}': merge the shards of one run at a time")]
    RunId {
        /// 1-based position of the odd result.
        at: usize,
        /// The first result's run id.
        want: String,
        /// The odd result's run id.
        found: String,
    },
    /// Results split into different numbers of shards, or planned to start differently.
    #[error("result {at} was split into {found}, result 1 into {want}: these are not shards of the same run")]
    Split {
        /// 1-based position of the odd result.
        at: usize,
        /// The first result's split (`3 shards starting at …`).
        want: String,
        /// The odd result's split.
        found: String,
    },
    /// Results whose configuration differs beyond each shard's share.
    #[error("result {at} ran a different configuration than result 1 ({field} differs): merge only shards of the same load")]
    Config {
        /// 1-based position of the odd result.
        at: usize,
        /// The first field that differs.
        field: &'static str,
    },
    /// The same shard twice.
    #[error("shard {index}/{total} appears twice (result {at}): give each shard's result once")]
    Duplicate {
        /// The shard's index.
        index: u32,
        /// The number of shards.
        total: u32,
        /// 1-based position of the second copy.
        at: usize,
    },
}

impl ShardRun {
    /// The shard indexes of `0..total` not in this result.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.total)
            .filter(|i| !self.shards.iter().any(|s| s.index == *i))
            .collect()
    }

    /// The indexes of the shards here that were cut short.
    pub fn interrupted(&self) -> Vec<u32> {
        self.shards
            .iter()
            .filter(|s| s.interrupted)
            .map(|s| s.index)
            .collect()
    }

    /// The missing shards in words, `None` when none is: `shard 1 of 3 is missing`,
    /// `shards 1 and 2 of 4 are missing`, `shards 0, 2 and 3 of 5 are missing`.
    pub fn missing_text(&self) -> Option<String> {
        let missing: Vec<String> = self.missing().iter().map(ToString::to_string).collect();
        let total = self.total;
        match missing.as_slice() {
            [] => None,
            [one] => Some(format!("shard {one} of {total} is missing")),
            [first @ .., last] => Some(format!(
                "shards {} and {last} of {total} are missing",
                first.join(", ")
            )),
        }
    }

    /// One line for reports: `shard 1/3 of run r1, started 0.412 ms after its start time` or
    /// `3 of 3 shards of run r1 merged, start skew 1.075 ms (hosts: 0@a, 1@b, 2@c)`.
    pub fn describe(&self) -> String {
        let ms = |ns: f64| format!("{:.3} ms", ns / 1e6);
        if let [one] = self.shards.as_slice() {
            let late = one
                .start_offset_ns
                .map(|ns| format!(", started {} after its start time", ms(ns as f64)))
                .unwrap_or_default();
            return format!(
                "shard {}/{} of run {}{late}",
                one.index, self.total, self.run_id
            );
        }
        let hosts: Vec<String> = self
            .shards
            .iter()
            .map(|s| format!("{}@{}", s.index, s.hostname))
            .collect();
        let mut text = format!(
            "{} of {} shards of run {} merged, start skew {} (hosts: {})",
            self.shards.len(),
            self.total,
            self.run_id,
            ms(self.start_skew_ns as f64),
            hosts.join(", ")
        );
        let missing = self.missing();
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(ToString::to_string).collect();
            text += &format!("; MISSING shards {}", list.join(", "));
        }
        let cut = self.interrupted();
        if !cut.is_empty() {
            let list: Vec<String> = cut.iter().map(ToString::to_string).collect();
            text += &format!("; INTERRUPTED shards {} (partial counts)", list.join(", "));
        }
        text
    }

    /// The whole-second slot of a shard's start: seconds after the planned start (or after
    /// the epoch without one), rounded down. Series are aligned on these.
    fn slot(&self, s: &ShardStart) -> i64 {
        let base = self.start_at_unix_ns.unwrap_or(0);
        (i128::from(s.started_at_unix_ns) - i128::from(base)).div_euclid(1_000_000_000) as i64
    }

    /// The earliest slot here: the wall-clock second that series second 0 stands for.
    fn first_slot(&self) -> i64 {
        self.shards.iter().map(|s| self.slot(s)).min().unwrap_or(0)
    }

    fn split_text(&self) -> String {
        match &self.start_at {
            Some(at) => format!("{} shards starting at {at}", self.total),
            None => format!("{} shards without a common start", self.total),
        }
    }

    fn skew(&self) -> u64 {
        let starts = self.shards.iter().map(|s| s.started_at_unix_ns);
        match (starts.clone().min(), starts.max()) {
            (Some(lo), Some(hi)) => hi - lo,
            _ => 0,
        }
    }
}

/// The exact merge of shard results of one run (any grouping of shards, merged ones too):
/// counts and histograms added, series aligned on wall-clock seconds, the configuration's
/// shares (connections, `-n`, threads) summed. Refuses results of different runs, splits or
/// configurations, and a shard given twice; [`ShardRun::missing`] tells what is absent.
pub fn merge_shards(results: &[RunResult]) -> Result<RunResult, MergeError> {
    let first = results.first().ok_or(MergeError::Empty)?;
    let base = first.shards.as_ref().ok_or(MergeError::NotAShard(1))?;
    let mut runs = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        runs.push(check_same_run(base, &first.config, r, i + 1)?);
    }
    let mut all: Vec<ShardStart> = Vec::new();
    for (i, (run, r)) in runs.iter().zip(results).enumerate() {
        for s in &run.shards {
            let mut s = s.clone();
            // A shard's own result: its `interrupted` is the shard's.
            s.interrupted |= run.shards.len() == 1 && r.interrupted;
            if all.iter().any(|a| a.index == s.index) {
                return Err(MergeError::Duplicate {
                    index: s.index,
                    total: run.total,
                    at: i + 1,
                });
            }
            all.push(s);
        }
    }
    all.sort_by_key(|s| s.index);
    let merged_run = ShardRun {
        shards: all,
        ..base.clone()
    };
    Ok(add_up(results, &runs, merged_run))
}

/// Checks that `r` (at 1-based position `at`) is a shard of the same run as the first.
fn check_same_run<'a>(
    base: &ShardRun,
    config: &RunConfig,
    r: &'a RunResult,
    at: usize,
) -> Result<&'a ShardRun, MergeError> {
    let run = r.shards.as_ref().ok_or(MergeError::NotAShard(at))?;
    if run.run_id != base.run_id {
        return Err(MergeError::RunId {
            at,
            want: base.run_id.clone(),
            found: run.run_id.clone(),
        });
    }
    if (run.total, &run.start_at_unix_ns) != (base.total, &base.start_at_unix_ns) {
        return Err(MergeError::Split {
            at,
            want: base.split_text(),
            found: run.split_text(),
        });
    }
    match config_difference(config, &r.config) {
        Some(field) => Err(MergeError::Config { at, field }),
        None => Ok(run),
    }
}

/// The first field in which two shards' configurations differ, each shard's share aside.
fn config_difference(a: &RunConfig, b: &RunConfig) -> Option<&'static str> {
    let checks: [(&'static str, bool); 11] = [
        ("url", a.url == b.url),
        ("method", a.method == b.method),
        ("headers", a.headers == b.headers),
        ("body", a.body_bytes == b.body_bytes),
        ("duration", a.duration_ms == b.duration_ms),
        ("-n", a.requests.is_some() == b.requests.is_some()),
        ("warm-up", a.warmup_ms == b.warmup_ms),
        ("keep-alive", a.keepalive == b.keepalive),
        (
            "timeouts",
            (a.timeout_ms, a.connect_timeout_ms) == (b.timeout_ms, b.connect_timeout_ms),
        ),
        ("percentiles", a.percentiles == b.percentiles),
        ("load model", unshared(&a.load) == unshared(&b.load)),
    ];
    checks
        .iter()
        .find(|(_, same)| !same)
        .map(|(field, _)| *field)
}

/// The load's shape without the shard's share (the connections, or the connection cap).
fn unshared(load: &LoadShape) -> LoadShape {
    let mut load = load.clone();
    match &mut load {
        LoadShape::Closed { connections } => *connections = 0,
        LoadShape::Open {
            max_connections, ..
        }
        | LoadShape::FindMax {
            max_connections, ..
        } => *max_connections = 0,
    }
    load
}

/// Adds the checked results up into one, its series on the earliest shard's second.
fn add_up(results: &[RunResult], runs: &[&ShardRun], mut merged_run: ShardRun) -> RunResult {
    let first_slot = merged_run.first_slot();
    merged_run.start_skew_ns = merged_run.skew();
    let mut out = results[0].clone();
    let mut window_us = 0u64;
    for (i, (r, run)) in results.iter().zip(runs).enumerate() {
        let shift = u32::try_from(run.first_slot() - first_slot).unwrap_or(u32::MAX);
        let mut stats = r.stats.clone();
        stats.series.shift(shift);
        window_us = window_us.max(u64::from(shift) * 1_000_000 + stats.elapsed_us);
        if i == 0 {
            out.stats = stats;
        } else {
            out.stats.merge(&stats);
        }
        out.interrupted |= r.interrupted;
    }
    out.stats.elapsed_us = window_us;
    add_config_shares(&mut out.config, results.iter().skip(1).map(|r| &r.config));
    out.started_at = earliest(results.iter().map(|r| &r.started_at), |a, b| a < b);
    out.ended_at = earliest(results.iter().map(|r| &r.ended_at), |a, b| a > b);
    out.shards = Some(merged_run);
    // Each shard's kernel evidence is its own host's: the merge keeps none of it.
    out.evidence = None;
    out.why = Default::default();
    // Every shard's pushes of the live series, added up.
    out.remote_write = results.iter().filter_map(|r| r.remote_write.as_ref()).fold(
        None,
        |sum: Option<crate::result::RemoteWriteCounts>, c| {
            let mut sum = sum.unwrap_or_else(|| crate::result::RemoteWriteCounts {
                url: c.url.clone(),
                ..Default::default()
            });
            sum.add(c);
            Some(sum)
        },
    );
    out.finalize();
    out
}

/// Sums the shares of `others` into `into`: connections, threads, `-n`, the connections or
/// the connection cap of the load.
fn add_config_shares<'a>(into: &mut RunConfig, others: impl Iterator<Item = &'a RunConfig>) {
    for c in others {
        into.connections += c.connections;
        into.threads += c.threads;
        if let (Some(n), Some(m)) = (into.requests.as_mut(), c.requests) {
            *n += m;
        }
        match (&mut into.load, &c.load) {
            (LoadShape::Closed { connections: a }, LoadShape::Closed { connections: b })
            | (
                LoadShape::Open {
                    max_connections: a, ..
                },
                LoadShape::Open {
                    max_connections: b, ..
                },
            ) => *a += b,
            _ => {}
        }
    }
}

/// The first of some RFC 3339 UTC stamps by `before` (they compare as text).
fn earliest<'a>(
    stamps: impl Iterator<Item = &'a String>,
    before: impl Fn(&String, &String) -> bool,
) -> String {
    stamps
        .fold(None::<&String>, |best, s| match best {
            Some(b) if !before(s, b) => Some(b),
            _ => Some(s),
        })
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(total: u32, present: &[u32]) -> ShardRun {
        ShardRun {
            run_id: "r1".into(),
            total,
            start_at: None,
            start_at_unix_ns: None,
            shards: present
                .iter()
                .map(|&index| ShardStart {
                    index,
                    hostname: "h".into(),
                    started_at: String::new(),
                    started_at_unix_ns: 0,
                    start_offset_ns: None,
                    interrupted: false,
                })
                .collect(),
            start_skew_ns: 0,
        }
    }

    /// Issue 35 point 8: the missing shards read as English, in the singular for one.
    #[test]
    fn missing_shards_are_said_in_words() {
        assert_eq!(run(3, &[0, 1, 2]).missing_text(), None);
        assert_eq!(
            run(2, &[0]).missing_text().as_deref(),
            Some("shard 1 of 2 is missing")
        );
        assert_eq!(
            run(4, &[0, 3]).missing_text().as_deref(),
            Some("shards 1 and 2 of 4 are missing")
        );
        assert_eq!(
            run(5, &[1, 4]).missing_text().as_deref(),
            Some("shards 0, 2 and 3 of 5 are missing")
        );
    }
}
