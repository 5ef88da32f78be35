//! The shape of a load, the one type for it from the spec to the saved result: closed with
//! its connections, open with a rate schedule and a cap on connections, or a find-max search
//! with its SLO. A run's configuration holds one; a bench load holds one per level (its typed
//! levels); the plan holds one with the engine's schedule (`LoadShape<plan::Schedule>`), so
//! the schedule's type is a parameter: saved results hold [`RateSegment`]s in milliseconds.

use crate::find_max::Slo;
use serde::{Deserialize, Serialize};

/// The cap on connections of an open or find-max load when none is given.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10_000;

/// How load is offered, and how much of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum LoadShape<S = Vec<RateSegment>> {
    /// Each connection sends its next request when the previous response arrived (wrk, ab,
    /// hey). Latency under overload is understated: coordinated omission.
    Closed {
        /// Concurrent connections, one request in flight on each.
        connections: u32,
    },
    /// Requests are sent on a schedule whether or not earlier ones returned; latency is
    /// measured from each request's intended send time.
    Open {
        /// The measured schedule (the warm-up runs at the first segment's rate).
        schedule: S,
        /// The most connections (requests in flight) the generator may open.
        max_connections: u32,
    },
    /// A search for the highest constant rate that holds `slo` (each step an open load).
    FindMax {
        /// The objective every passing step meets.
        slo: Slo,
        /// The most connections (requests in flight) a step may open.
        max_connections: u32,
    },
}

impl<S> LoadShape<S> {
    /// The model's name as the JSON writes it: `closed`, `open` or `find_max`.
    pub fn model_name(&self) -> &'static str {
        match self {
            LoadShape::Closed { .. } => "closed",
            LoadShape::Open { .. } => "open",
            LoadShape::FindMax { .. } => "find_max",
        }
    }

    /// The same shape with its schedule turned into another representation (the plan's
    /// schedule into saved segments, say).
    pub fn map_schedule<T>(&self, f: impl FnOnce(&S) -> T) -> LoadShape<T> {
        match self {
            LoadShape::Closed { connections } => LoadShape::Closed {
                connections: *connections,
            },
            LoadShape::Open {
                schedule,
                max_connections,
            } => LoadShape::Open {
                schedule: f(schedule),
                max_connections: *max_connections,
            },
            LoadShape::FindMax {
                slo,
                max_connections,
            } => LoadShape::FindMax {
                slo: slo.clone(),
                max_connections: *max_connections,
            },
        }
    }
}

impl LoadShape {
    /// An open load at a constant `rate` for `duration_ms`: one level of a bench's open load.
    pub fn constant(rate: f64, duration_ms: u64, max_connections: u32) -> LoadShape {
        LoadShape::Open {
            schedule: vec![RateSegment {
                duration_ms,
                from_rate: rate,
                to_rate: rate,
            }],
            max_connections,
        }
    }

    /// What a level sweeps, as a number: the connections (closed) or the first rate (open);
    /// `None` for a find-max search, which has no amount of its own.
    pub fn amount(&self) -> Option<f64> {
        match self {
            LoadShape::Closed { connections } => Some(f64::from(*connections)),
            LoadShape::Open { schedule, .. } => schedule.first().map(|s| s.from_rate),
            LoadShape::FindMax { .. } => None,
        }
    }

    /// `c=10`, `1000/s` or `find-max`: how reports show a level.
    pub fn label(&self) -> String {
        match self {
            LoadShape::Closed { connections } => format!("c={connections}"),
            LoadShape::Open { .. } => format!("{}/s", self.amount().unwrap_or(0.0)),
            LoadShape::FindMax { .. } => "find-max".into(),
        }
    }
}

/// One piece of an open-model schedule: the target rate goes linearly from `from_rate` to
/// `to_rate` requests per second over `duration_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSegment {
    /// Length of this segment, ms.
    pub duration_ms: u64,
    /// Target rate at the start of the segment, requests per second.
    pub from_rate: f64,
    /// Target rate at the end of the segment, requests per second.
    pub to_rate: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_written_with_their_model_and_read_back() {
        let closed: LoadShape = LoadShape::Closed { connections: 50 };
        let json = serde_json::to_value(&closed).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"model": "closed", "connections": 50})
        );
        let open = LoadShape::constant(250.0, 1000, 100);
        let json = serde_json::to_value(&open).unwrap();
        assert_eq!(json["model"], "open");
        assert_eq!(json["schedule"][0]["from_rate"], 250.0);
        assert_eq!(serde_json::from_value::<LoadShape>(json).unwrap(), open);
        assert_eq!(
            (closed.label(), open.label()),
            ("c=50".into(), "250/s".into())
        );
        assert_eq!(closed.amount(), Some(50.0));
    }
}
