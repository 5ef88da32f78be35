//! The open model's connection pool, as a run saw it: how many connections it opened before
//! the schedule started, how many connects it began in all, and the most connects it had in
//! progress at once (checked against its limit). A storm of connects (every due request
//! starting one of its own while the earlier ones were still pending) shows here at once.

use serde::{Deserialize, Serialize};

/// Open model: the pool's counts, summed over workers and shards. Absent from the JSON (all
/// zero) in closed-model runs and in files written before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolCounts {
    /// Connections opened before the schedule started (`-c`, or sized from the rate).
    #[serde(default)]
    pub initial: u64,
    /// Connects begun in the whole run (the initial pool, the pool's growth and reconnects
    /// after the server closed a connection), warm-up included.
    #[serde(default)]
    pub connects: u64,
    /// The most connects in progress at once; summed over workers, so an upper bound of the
    /// whole run's peak.
    #[serde(default)]
    pub connects_peak: u64,
    /// The limit on connects in progress at once (`--connect-limit`), split over workers and
    /// summed back.
    #[serde(default)]
    pub connect_limit: u64,
    /// Connects begun before the end of the schedule's first second, the initial pool
    /// included: a storm of connects at the start shows here. Absent in files written before.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_second: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PoolCounts {
    /// Adds another worker's (or shard's) counts.
    pub fn merge(&mut self, o: &PoolCounts) {
        self.initial += o.initial;
        self.connects += o.connects;
        self.connects_peak += o.connects_peak;
        self.connect_limit += o.connect_limit;
        self.first_second += o.first_second;
    }

    /// Nothing recorded: a closed-model run, or a file from before these counts.
    pub fn is_empty(&self) -> bool {
        *self == PoolCounts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::PoolCounts;

    #[test]
    fn counts_add_and_an_empty_pool_is_left_out_of_the_json() {
        let w = PoolCounts {
            initial: 4,
            connects: 6,
            connects_peak: 3,
            connect_limit: 32,
            first_second: 5,
        };
        let mut all = w;
        all.merge(&w);
        assert_eq!((all.initial, all.connects, all.connects_peak), (8, 12, 6));
        assert_eq!((all.connect_limit, all.first_second), (64, 10));
        assert!(PoolCounts::default().is_empty() && !w.is_empty());
    }
}
