//! hey's split of a request's time into writing the request, waiting for the server and
//! reading the response ("req write", "resp wait", "resp read"). The engine already reads the
//! clock at these points, so the split costs three histogram records per completed request;
//! kept as histograms so workers, rounds and shards merge exactly like the latency.

use crate::histogram::Latency;
use serde::{Deserialize, Serialize};

/// Each completed request's time, split in three consecutive phases that together make its
/// service time (from the actual send to the last response byte): never more than its latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestPhases {
    /// From the first request byte written to the last one written ("req write").
    #[serde(default)]
    pub write: Latency,
    /// From the last request byte written to the first response byte read ("resp wait"): the
    /// server's think time plus the network's round trip.
    #[serde(default)]
    pub wait: Latency,
    /// From the first response byte read to the response complete ("resp read"); 0 when the
    /// whole response arrived in one read.
    #[serde(default)]
    pub read: Latency,
}

impl RequestPhases {
    /// Histograms add: associative, like every other merge.
    pub fn merge(&mut self, o: &RequestPhases) {
        self.write.merge(&o.write);
        self.wait.merge(&o.wait);
        self.read.merge(&o.read);
    }

    /// Requests split (0 in results saved before the split was recorded).
    pub fn count(&self) -> u64 {
        self.wait.hist.len()
    }
}
