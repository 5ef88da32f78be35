//! Requests served per route pattern. The hot path bumps one relaxed atomic in a fixed array
//! indexed by the route enum (no map, no lock); `/stats` and `Server::stats` read a snapshot.
//! The `in_service` and `queued` gauges are read from the concurrency limit, and
//! `abandoned_completed` from the `keep_abandoned` tasks; the app fills them in.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::routes::Route;

/// Lock-free per-route counters; the total is their sum, so a request costs one atomic add.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    per_route: [AtomicU64; Route::ALL.len()],
    /// Of those, requests that came over HTTP/2 (only they pay this second add).
    h2: AtomicU64,
    /// Of those, requests that came over HTTP/3 (QUIC).
    h3: AtomicU64,
    /// WebSocket connections open now (upgraded at `/ws`, not ended): a gauge.
    ws_open: AtomicU64,
}

impl Counters {
    pub(crate) fn hit(&self, route: Route) {
        self.per_route[route as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The request just counted by [`Counters::hit`] came over HTTP/2.
    pub(crate) fn hit_h2(&self) {
        self.h2.fetch_add(1, Ordering::Relaxed);
    }

    /// The request just counted by [`Counters::hit`] came over HTTP/3.
    pub(crate) fn hit_h3(&self) {
        self.h3.fetch_add(1, Ordering::Relaxed);
    }

    /// A WebSocket connection upgraded (`true`) or ended (`false`).
    pub(crate) fn ws_open(&self, opened: bool) {
        if opened {
            self.ws_open.fetch_add(1, Ordering::Relaxed);
        } else {
            self.ws_open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Zeroes every counter and returns what they held.
    pub(crate) fn reset(&self) -> Stats {
        self.collect(|c| c.swap(0, Ordering::Relaxed))
    }

    pub(crate) fn snapshot(&self) -> Stats {
        self.collect(|c| c.load(Ordering::Relaxed))
    }

    fn collect(&self, read: impl Fn(&AtomicU64) -> u64) -> Stats {
        let routes: BTreeMap<_, _> = Route::ALL
            .iter()
            .map(|&r| (r.pattern(), read(&self.per_route[r as usize])))
            .collect();
        Stats {
            total: routes.values().sum(),
            h2: read(&self.h2),
            h3: read(&self.h3),
            routes,
            in_service: 0,
            queued: 0,
            abandoned_completed: 0,
            ws_open: self.ws_open.load(Ordering::Relaxed),
        }
    }
}

/// A snapshot of the requests served, keyed by route pattern (`/`, `/bytes`, `/fault/reset`,
/// `unmatched` for 404s). Requests to `/stats` itself are not counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// All counted requests.
    pub total: u64,
    /// Of `total`, requests over HTTP/2 (h2 over TLS, or h2c).
    pub h2: u64,
    /// Of `total`, requests over HTTP/3 (QUIC, beside TLS); the rest (neither `h2` nor `h3`)
    /// came over HTTP/1.x.
    pub h3: u64,
    /// Every route pattern, including those with zero requests.
    pub routes: BTreeMap<&'static str, u64>,
    /// Requests holding one of the `max_concurrency` slots at the moment of the snapshot
    /// (waiting out their delay or a stall); always 0 without a limit. A gauge: resets keep it.
    /// With `keep_abandoned` it includes requests whose client has gone.
    pub in_service: u64,
    /// Ordinary requests waiting in line for one of the `max_concurrency` slots at the moment
    /// of the snapshot; always 0 without a limit. A gauge: resets keep it.
    pub queued: u64,
    /// With `keep_abandoned`: requests whose client had gone before the answer, finished
    /// anyway (the answer discarded). Always 0 without it; a counter, zeroed by resets.
    pub abandoned_completed: u64,
    /// WebSocket connections open at the moment of the snapshot (upgraded at `/ws`, not
    /// ended yet). A gauge: resets keep it.
    pub ws_open: u64,
}

impl Stats {
    /// Requests served by one route pattern (0 for an unknown pattern).
    pub fn route(&self, pattern: &str) -> u64 {
        self.routes.get(pattern).copied().unwrap_or(0)
    }

    /// `{"total":123,"routes":{"/":100,"/json":23,...},"protocols":{"http1":123,"h2":0,"h3":0},
    /// "in_service":0,"queued":0,"abandoned_completed":0}`, the body of `GET /stats`.
    pub fn to_json(&self) -> String {
        let json = serde_json::json!({
            "total": self.total,
            "protocols": {
                "http1": self.total.saturating_sub(self.h2 + self.h3),
                "h2": self.h2,
                "h3": self.h3,
            },
            "routes": self.routes,
            "in_service": self.in_service,
            "queued": self.queued,
            "abandoned_completed": self.abandoned_completed,
            "ws_open": self.ws_open,
        });
        json.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_route_and_resets() {
        let counters = Counters::default();
        counters.hit(Route::Root);
        counters.hit(Route::Root);
        counters.hit(Route::FaultReset);
        counters.hit_h2();
        counters.hit_h3();
        let stats = counters.snapshot();
        assert_eq!((stats.h2, stats.h3), (1, 1));
        let json: serde_json::Value = serde_json::from_str(&stats.to_json()).unwrap();
        assert_eq!(
            json["protocols"],
            serde_json::json!({"http1": 1, "h2": 1, "h3": 1})
        );
        assert_eq!(
            (stats.total, stats.route("/"), stats.route("/fault/reset")),
            (3, 2, 1)
        );
        assert_eq!(counters.reset(), stats);
        assert_eq!(counters.snapshot().total, 0);
    }

    #[test]
    fn json_lists_every_route() {
        let json: serde_json::Value =
            serde_json::from_str(&Counters::default().snapshot().to_json()).unwrap();
        assert_eq!(json["total"], 0);
        assert_eq!(json["protocols"]["h2"], 0);
        assert_eq!(json["protocols"]["h3"], 0);
        assert_eq!(json["routes"].as_object().unwrap().len(), Route::ALL.len());
        for gauge in ["in_service", "queued", "abandoned_completed"] {
            assert_eq!(json[gauge], 0, "{gauge}");
        }
    }
}
